"""judge_stats.json survives a kill -9: a process asking a batch of 40 items is killed midway,
and the file already accounts for the calls the scripted server answered."""
from __future__ import annotations

import json
import sys
import time

from tests.judge.judge_server import JudgeServer
from tests.kills import run_until

ASK = """
import sys
from factrl.harness.engine.config import compose
from factrl.harness.services.judge import ATOMIC_FACTS, open_judge
cfg = compose(["judge=openai", f"judge.base_url={sys.argv[1]}", "judge.model=judge-model", "judge.cache=null",
               "judge.api_key_env=null", "judge.concurrency=1"])
with open_judge(cfg.judge, run_dir=sys.argv[2]) as judge:
    judge.ask_many(ATOMIC_FACTS, [{"text": f"Fact number {i} is here."} for i in range(40)])
"""


def test_a_killed_batch_leaves_its_calls_in_judge_stats(tmp_path):
    with JudgeServer(latency=0.05) as server:
        started = time.monotonic()

        def half_answered():
            return len(server.arrivals) >= 20 or time.monotonic() - started > 120

        rc = run_until([sys.executable, "-c", ASK, server.url, str(tmp_path)], tmp_path / "log", half_answered)
        arrived = len(server.arrivals)
    assert rc == -9, (tmp_path / "log").read_text()[-2000:]
    stats = json.loads((tmp_path / "judge_stats.json").read_text())["totals"]
    # Lost at most: the request in flight and those of the last write interval (0.25 s at 20/s).
    assert arrived - 8 <= stats["calls"] <= arrived
    assert stats["items"] == 40 and stats["failures"] == 0
