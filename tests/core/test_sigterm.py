"""SIGTERM (what a Slurm time limit sends) on a real `harness run`: the run says `interrupted`
in run.json, exits 143, and the same command resumes it from its last checkpoint."""
from __future__ import annotations

import json
import signal
import sys

import pytest

from tests.kills import published, run_until


@pytest.mark.slow  # two `harness run` processes on tiny-llama (about 40 s on 2 shared cores)
def test_sigterm_marks_the_run_interrupted_and_the_rerun_resumes(tmp_path):
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "factrl.harness.engine.cli", "run", "method=corver", "model=tiny-llama", "train.steps=3",
           "train.save_steps=1", "train.completions_per_question=2", "train.max_completion_length=8",
           "eval.limit=2", "leaderboard=rundir", f"leaderboard.store={tmp_path / 'lb.sqlite'}", f"output_dir={runs}"]
    log = tmp_path / "attempts.log"

    def run_dir():
        return next(runs.glob("*-corver-tiny-llama-*"), runs / "none")

    assert run_until(cmd, log, lambda: published(run_dir() / "train", 1)(), sig=signal.SIGTERM) == 143
    info = json.loads((run_dir() / "run.json").read_text())
    assert info["status"] == "interrupted" and "SIGTERM" in info["error"]
    text = log.read_text()
    assert "harness run: interrupted; rerun the same command to resume." in text and "Traceback" not in text
    from factrl.harness.training.checkpoints import problems

    assert problems(run_dir() / "train" / "checkpoint-1", ["trainer_state.json", "optimizer.pt"]) == []
    assert run_until(cmd, log) == 0, log.read_text()[-3000:]
    info = json.loads((run_dir() / "run.json").read_text())
    assert info["status"] == "finished" and info["attempts"] == 2
    assert "resuming from" in (run_dir() / "run.log").read_text()
