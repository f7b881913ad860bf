"""Claim files (harness/engine/run/claims.py): exclusive creation, heartbeat, stale takeover, the grid's
pending claims taken over by its jobs, and `harness run` refusing a run another job holds."""
from __future__ import annotations

import json
import os
import socket
import time

import pytest

from factrl.harness.engine.run import claims as claims
from factrl.harness.engine.run.claims import ClaimedError, acquire


def _foreign(path, *, age_s=0.0, state="running", stale_after_s=900.0, host="node17", pid=4242):
    path.parent.mkdir(parents=True, exist_ok=True)
    info = {"token": "someone-else", "state": state, "job_id": "991_3", "host": host, "pid": pid,
            "started": time.time() - age_s, "heartbeat": time.time() - age_s, "stale_after_s": stale_after_s}
    path.write_text(json.dumps(info))
    return info


def test_one_holder_at_a_time_and_release(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "12345")
    monkeypatch.delenv(claims.TOKEN_ENV, raising=False)
    path = tmp_path / ".claims" / "raw-tiny-llama-abc.json"
    with acquire(path, heartbeat_s=3600) as held:
        info = json.loads(path.read_text())
        assert info["token"] == held.token and info["state"] == "running" and info["job_id"] == "12345"
        assert info["host"] == socket.gethostname() and info["pid"] == os.getpid()
        with pytest.raises(ClaimedError) as err:  # another process (another token) of this machine
            acquire(path, token="other")
        message = str(err.value)
        assert "job 12345" in message and f"pid {os.getpid()}" in message and str(path) in message
        assert "\n" not in message
    assert not path.exists()  # released at the end


def test_a_foreign_fresh_claim_refuses_and_a_stale_one_is_taken_over(tmp_path):
    path = tmp_path / "c.json"
    _foreign(path, age_s=30)
    with pytest.raises(ClaimedError, match=r"running \(job 991_3, host node17, pid 4242, heartbeat 3\d s ago\)"):
        acquire(path, stale_after_s=900)
    assert json.loads(path.read_text())["token"] == "someone-else"  # untouched
    _foreign(path, age_s=1000)  # its holder stopped beating 1000 s ago
    with acquire(path, heartbeat_s=3600) as held:
        assert json.loads(path.read_text())["token"] == held.token
    assert not list(tmp_path.glob(".c.json.*"))  # nothing left beside it


def test_a_running_claim_of_a_dead_local_process_is_stale_at_once(tmp_path):
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    path = tmp_path / "c.json"
    _foreign(path, host=socket.gethostname(), pid=int(gone.stdout))
    with acquire(path, heartbeat_s=3600) as held:
        assert json.loads(path.read_text())["pid"] == os.getpid() and held.owned
    # A pending claim is the grid's: its job waits in the queue whether the grid lives or not.
    _foreign(path, host=socket.gethostname(), pid=int(gone.stdout), state="pending", stale_after_s=86400)
    with pytest.raises(ClaimedError):
        acquire(path)


def test_heartbeat_refreshes_and_stops_when_taken_over(tmp_path):
    path = tmp_path / "c.json"
    held = acquire(path, heartbeat_s=0.05)
    first = json.loads(path.read_text())["heartbeat"]
    deadline = time.time() + 10
    while json.loads(path.read_text())["heartbeat"] == first and time.time() < deadline:
        time.sleep(0.05)
    assert json.loads(path.read_text())["heartbeat"] > first
    _foreign(path)  # taken over (e.g. after this process froze for longer than stale_s)
    time.sleep(0.3)
    assert json.loads(path.read_text())["token"] == "someone-else"  # the old holder never writes over it
    held.release()
    assert path.exists()  # and never deletes another's claim


def test_the_grid_pending_claim_is_taken_over_by_its_job_and_joined_by_its_ranks(tmp_path, monkeypatch):
    path = tmp_path / "c.json"
    grid = acquire(path, state="pending", token="grid-token", stale_after_s=86400, heartbeat_s=3600)
    assert json.loads(path.read_text())["state"] == "pending"
    with pytest.raises(ClaimedError, match="pending"):  # a second grid, or a hand-started run
        acquire(path, token="another-grid")
    monkeypatch.setenv(claims.TOKEN_ENV, "grid-token")  # the job the grid submitted
    job = acquire(path, heartbeat_s=3600)
    assert job.owned and json.loads(path.read_text())["state"] == "running"
    rank0 = acquire(path)  # a process the job's launcher started: same token, a running claim
    assert not rank0.owned
    rank0.release()
    grid.release()  # the grid's release leaves the job's claim alone
    assert json.loads(path.read_text())["state"] == "running"
    job.release()
    assert not path.exists()


def test_the_grid_heartbeat_stops_quietly_at_its_jobs_handover_and_warns_at_a_takeover(tmp_path, monkeypatch,
                                                                                        caplog):
    """The grid's pending claim beats until its job takes it over: that handover (same token) is
    not reported as a takeover; a claim of another token is."""
    caplog.set_level("DEBUG", logger="factrl.claims")
    handed, taken = tmp_path / "handed.json", tmp_path / "taken.json"
    grid = acquire(handed, state="pending", token="grid-token", stale_after_s=86400, heartbeat_s=0.05)
    other = acquire(taken, state="pending", token="grid-token", stale_after_s=86400, heartbeat_s=0.05)
    monkeypatch.setenv(claims.TOKEN_ENV, "grid-token")
    job = acquire(handed, heartbeat_s=3600)
    _foreign(taken)
    for claim in (grid, other):
        claim._thread.join(timeout=10)
        assert not claim._thread.is_alive()  # each heartbeat stopped
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [f"claim {taken} was taken over by another holder; this process no longer holds it"]
    assert any("handed over" in r.getMessage() and r.levelname == "DEBUG" for r in caplog.records)
    job.release(), grid.release(), other.release()


def test_harness_run_stops_when_another_job_holds_the_run(tmp_path, monkeypatch):
    from factrl.harness.engine.config import compose
    from factrl.harness.engine.run import run_task

    monkeypatch.delenv(claims.TOKEN_ENV, raising=False)
    cfg = compose(["method=raw", "model=tiny-llama", "eval.limit=2", f"output_dir={tmp_path}",
                   "leaderboard=rundir"])
    path = claims.claim_path(cfg)
    assert path.parent == tmp_path / ".claims"
    _foreign(path, age_s=5)
    with pytest.raises(ClaimedError, match="is claimed by another process: running"):
        run_task(cfg)
    assert [p.name for p in tmp_path.iterdir()] == [".claims"]  # no run directory was opened
