"""`judge=embedded` with a real `transformers serve` on the embedded tiny-llama directory.

tiny-llama is a random model: its replies are noise, so the strict parser fails them, and
that must show in the counts, not break anything. Needs the `transformers[serving]` extra.
"""
from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
import time

import pytest

from factrl.harness.core.errors import HarnessError
from factrl.harness.services.judge import SIMPLEQA_GRADE, open_judge

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("fastapi", "uvicorn")),
                                 reason="`transformers serve` needs pip install 'transformers[serving]'")]

CFG = {"backend": "embedded", "model": "tiny-llama", "timeout": 60, "max_retries": 1, "concurrency": 2,
       "max_reasks": 1, "max_tokens": 16, "max_failed_share": 1.0, "stand_in": True,
       "note": "a tiny random model stands in for a real judge", "startup_timeout": 180}


def test_embedded_judge_serves_offline_counts_failures_and_stops(tmp_path):
    run = tmp_path / "run"
    items = [{"question": "What is the capital of France?", "gold": "Paris", "answer": a} for a in ("Paris", "Rome")]
    with pytest.raises(KeyboardInterrupt):
        with open_judge({**CFG, "cache": str(tmp_path / "cache.sqlite3")}, run_dir=run) as judge:  # check() passed
            server = judge._server
            assert server.running and server.base_url.startswith("http://127.0.0.1:")
            results = judge.ask_many(SIMPLEQA_GRADE, items)
            stats = judge.stats()
            entry = judge.describe()
            raise KeyboardInterrupt  # Ctrl-C mid-run: the server must still stop
    assert not server.running and server.proc is None
    assert len(results) == 2 and all(r.ok == (r.value is not None) for r in results)
    assert stats["items"] == 2 and stats["failures"] == sum(not r.ok for r in results)
    assert stats["calls"] == stats["items"] + stats["retries"] + stats["reasks"]
    assert entry["kind"] == "judge" and entry["backend"] == "embedded" and entry["model"] == "tiny-llama"
    assert entry["stand_in"] is True and entry["note"] and len(entry["sha256"]) == 64
    assert (entry["served_model"], entry["substitute"]) == ("tiny-llama", True)
    # transformers serve takes no JSON schema (it ignores response_format): found once by the preflight probe
    assert entry["structured_supported"] is False and entry["reply_mode"] == "text"
    assert entry["prompts"]["simpleqa_grade"]["reply_mode"] == "text"
    assert (run / "judge_server.log").is_file()
    doc = json.loads((run / "judge_stats.json").read_text())
    assert doc["judge"]["stand_in"] is True and doc["totals"]["items"] == 2


def test_a_server_that_cannot_start_is_a_one_line_error_with_its_log(tmp_path, caplog, monkeypatch):
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "no-such-architecture"}')
    monkeypatch.setattr(logging.getLogger("factrl"), "propagate", True)  # a run's attach_log may have cut it
    caplog.set_level(logging.INFO, logger="factrl.harness.services.judge")
    with pytest.raises(HarnessError) as caught:
        open_judge({**CFG, "model": str(broken), "cache": None, "startup_timeout": 120}, run_dir=tmp_path)
    # The wait (up to judge.startup_timeout) is announced before it starts, not only after.
    starting = [r.getMessage() for r in caplog.records if r.getMessage().startswith("starting judge server")]
    assert starting and f"on {broken}; waiting up to 120s" in starting[0] and "judge_server.log" in starting[0]
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"judge=embedded: transformers serve on {broken} exited during startup; its log ")
    assert "no-such-architecture" in message or "Error" in message


HOLDER = """
import sys, time
from factrl.harness.services.judge import open_judge
judge = open_judge({"backend": "embedded", "model": "tiny-llama", "cache": None, "stand_in": True,
                    "note": "test", "startup_timeout": 180}, check=False)
print(judge._server.proc.pid, flush=True)
time.sleep(600)
"""


def test_a_killed_harness_leaves_no_server_behind():
    # SIGKILL (or a job's SIGTERM) skips close() and atexit: the server's watchdog must notice.
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})
    try:
        server_pid = int(holder.stdout.readline())
        assert _alive(server_pid)
    finally:
        holder.kill()
        holder.wait(10)
    deadline = time.monotonic() + 30
    while _alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _alive(server_pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = open(f"/proc/{pid}/stat").read() if os.path.exists(f"/proc/{pid}/stat") else ""
    return " Z " not in stat  # a zombie has exited
