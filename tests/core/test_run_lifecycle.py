"""The run lifecycle's last windows (harness/engine/run/orchestrate.py, harness/core/rundir.py):

- a run stopped after run.json says `finished` and before its leaderboard rows are recorded (a
  kill, a SIGTERM) is recorded by the rerun, once, and never reported as
  "leaderboard.enabled=false";
- a rerun over a run directory another harness version or commit started records that as a note
  of the attempt instead of overwriting the version silently."""
from __future__ import annotations

import json
import signal
import sqlite3
import sys

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.core.rundir import open_run
from tests.helpers import harness
from tests.kills import run_until


def _rows(store) -> int:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT COUNT(*) FROM rows").fetchone()[0]


def _args(tmp_path, *extra):
    return ["run", "method=raw", "model=tiny-llama", "eval.limit=2", f"output_dir={tmp_path / 'runs'}",
            f"leaderboard.store={tmp_path / 'lb.sqlite'}", *extra]


def _run_json(tmp_path) -> tuple:
    path = next((tmp_path / "runs").glob("*-raw-tiny-llama-*")) / "run.json"
    return path, json.loads(path.read_text())


def test_a_run_stopped_between_finishing_and_recording_is_recorded_by_the_rerun_once(tmp_path):
    first = harness(*_args(tmp_path))
    assert first.returncode == 0, first.stderr[-2000:]
    store = tmp_path / "lb.sqlite"
    assert _rows(store) == 1
    # What a kill right after run.json said `finished` left (measured: 3 of 3 kills): no
    # `leaderboard` entry in run.json and a store that is an empty file.
    path, info = _run_json(tmp_path)
    info.pop("leaderboard")
    path.write_text(json.dumps(info))
    store.write_bytes(b"")
    again = harness(*_args(tmp_path))
    assert again.returncode == 0, again.stderr[-2000:]
    assert "harness run: already finished" in again.stdout
    assert f"leaderboard: recorded in {store} (1 added, 0 unchanged, 0 replaced)" in again.stdout
    assert "leaderboard.enabled=false" not in again.stdout
    third = harness(*_args(tmp_path))
    assert f"leaderboard: recorded in {store} (1 added, 0 unchanged, 0 replaced)" in third.stdout  # as run.json says
    assert _rows(store) == 1 and _run_json(tmp_path)[1]["leaderboard"]["status"] == "recorded"
    off = harness(*_args(tmp_path, "leaderboard.enabled=false", "force=true"))
    assert "leaderboard: not recorded (leaderboard.enabled=false)" in off.stdout


def test_a_real_kill_once_finished_then_a_rerun_leaves_one_row(tmp_path):
    """Whenever the kill lands after `finished` (before, during or after recording), the rerun
    leaves exactly one row and run.json says it is recorded."""
    cmd = [sys.executable, "-m", "factrl.harness.engine.cli", *_args(tmp_path)]
    log = tmp_path / "attempts.log"

    def finished() -> bool:
        found = list((tmp_path / "runs").glob("*-raw-tiny-llama-*/run.json"))
        try:
            return bool(found) and json.loads(found[0].read_text()).get("status") == "finished"
        except ValueError:
            return False

    assert run_until(cmd, log, finished, sig=signal.SIGKILL) in (-9, 0)
    assert run_until(cmd, log) == 0, log.read_text()[-2000:]
    assert _rows(tmp_path / "lb.sqlite") == 1 and _run_json(tmp_path)[1]["leaderboard"]["status"] == "recorded"
    assert "Traceback" not in log.read_text()


def test_a_rerun_of_another_harness_version_is_a_note_of_the_attempt(tmp_path, caplog):
    cfg = compose(["method=raw", "model=tiny-llama", f"output_dir={tmp_path}"])
    run = open_run(cfg)
    first = run.info
    assert "notes" not in first and (run.path / ".space-reserve").stat().st_size == 64 * 1024
    run.update(harness_version="0.9.0", git_commit="0123abc")  # an older harness started it
    again = open_run(cfg)
    info = again.info
    assert again.path == run.path and info["attempts"] == 2
    assert info["harness_version"] == first["harness_version"] and info["git_commit"] == first["git_commit"]
    [note] = info["notes"]
    assert note["attempt"] == 2 and note["from"] == {"harness_version": "0.9.0", "git_commit": "0123abc"}
    assert note["to"] == {"harness_version": first["harness_version"], "git_commit": first["git_commit"]}
    assert "attempts before it ran 0.9.0 (0123abc): its results mix both" in note["note"]
    assert any("attempts before it ran 0.9.0" in r.getMessage() for r in caplog.records)
    third = open_run(cfg).info  # the same version again: no new note
    assert third["attempts"] == 3 and len(third["notes"]) == 1
