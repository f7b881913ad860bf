"""`harness run`'s leaderboard outcome is never silent: a row refused for a frozen field is one
line naming the field, both values and the fix, and the printed summary says "not recorded"."""
from __future__ import annotations

import json

import pytest

from tests.helpers import harness


def _run(tmp_path, limit: int):
    return harness("run", "method=raw", "model=tiny-llama", f"eval.limit={limit}", f"output_dir={tmp_path / 'runs'}",
                   f"leaderboard.store={tmp_path / 'lb.sqlite'}")


@pytest.mark.slow  # three tiny-llama runs
def test_a_run_refused_for_another_eval_limit_says_so_in_one_line(tmp_path):
    first = _run(tmp_path, 2)
    assert first.returncode == 0, first.stderr[-3000:]
    assert f"leaderboard: recorded in {tmp_path / 'lb.sqlite'} (1 added, 0 unchanged, 0 replaced)" in first.stdout

    second = _run(tmp_path, 3)  # the store's version 1 froze the demo set at 2 questions
    assert second.returncode == 0, second.stderr[-3000:]  # the run itself is kept
    cause = "eval.limit = 3, but version 1 of this store froze 2 (set demo)"
    summary = [line for line in second.stdout.splitlines() if line.startswith("leaderboard:")]
    assert summary == [f"leaderboard: NOT recorded: {cause} in {tmp_path / 'lb.sqlite'} "
                       "(run.json `leaderboard` says more)"]
    warned = [line for line in second.stderr.splitlines() if "not recorded" in line]
    assert len(warned) == 1 and cause in warned[0], second.stderr[-3000:]
    assert "leaderboard.store=PATH" in warned[0] and "leaderboard=rundir" in warned[0]
    assert "new leaderboard version" in warned[0] and "{" not in warned[0]  # no JSON of the whole pin

    infos = [json.loads((p / "run.json").read_text()) for p in (tmp_path / "runs").glob("*-raw-tiny-llama-*")]
    info = next(i for i in infos if i["leaderboard"]["status"] == "refused")
    assert info["status"] == "finished"
    assert [(f["set"], f["field"], f["new"], f["stored"]) for f in info["leaderboard"]["frozen"]] == \
        [("demo", "eval.limit", 3, 2)]

    # The fix the line names: another store takes the run.
    third = harness("run", "method=raw", "model=tiny-llama", "eval.limit=3", f"output_dir={tmp_path / 'runs'}",
                    f"leaderboard.store={tmp_path / 'other.sqlite'}", "force=true")
    assert third.returncode == 0, third.stderr[-3000:]
    assert f"leaderboard: recorded in {tmp_path / 'other.sqlite'}" in third.stdout
    # Its answers were all there already (resumed or cached): the run says so, not a silent second.
    assert "nothing to generate: demo: " in third.stderr and " resumed" in third.stderr
