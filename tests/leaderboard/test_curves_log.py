"""A run's curves keep its last step: TRL ends train/log.jsonl with a summary line (`train_runtime`
...) under the last step's number, which once replaced that step's metrics (the published curves
stopped one step short and the movement rule lost the final reward)."""
from __future__ import annotations

import json

from factrl.leaderboard import curves


def _write(run_dir, lines):
    (run_dir / "train").mkdir(parents=True)
    (run_dir / "train" / "log.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_the_closing_summary_line_keeps_the_last_steps_metrics(tmp_path):
    _write(tmp_path, [
        {"step": 1, "reward": -1.0, "rewards/corver/format_rate": 0.5},
        {"step": 2, "reward": 0.25, "rewards/corver/format_rate": 1.0},
        {"step": 2, "train_runtime": 65.4, "train_loss": 0.01},
    ])
    training = curves.of_run(tmp_path)
    assert training["steps"] == [1, 2]
    assert training["curves"]["reward"] == [-1.0, 0.25]
    assert training["curves"]["rewards/corver/format_rate"] == [0.5, 1.0]
    assert curves.series(training, "reward") == ([1, 2], [-1.0, 0.25])


def test_a_repeated_step_after_a_resume_takes_the_later_values(tmp_path):
    _write(tmp_path, [
        {"step": 1, "reward": -1.0},
        {"step": 2, "reward": 9.0},  # written before a kill
        {"step": 2, "reward": 0.5},  # the resumed run's step 2
        "not json",
    ])
    assert curves.of_run(tmp_path)["curves"]["reward"] == [-1.0, 0.5]
