"""Fixtures of the leaderboard tests: synthetic run directories in the CONTRACTS layout,
a store filled with a paper-shaped grid, and the paper's Table 1 numbers for one model."""
from __future__ import annotations

from pathlib import Path

import pytest

from factrl.leaderboard.record import record_run
from factrl.leaderboard.testing import make_run_dir

FIVE = ("triviaqa", "nq_open", "popqa", "simpleqa", "truthfulqa")
# CorVer paper, Table 1, Llama-3.2-3B-Instruct (accuracy %).
PAPER_LLAMA32_3B = {
    "raw": (57.84, 36.65, 18.54, 2.24, 36.35),
    "forag": (60.79, 40.28, 21.17, 2.24, 42.35),
    "rlfh": (59.12, 36.90, 20.75, 2.61, 37.21),
    "fspo": (59.45, 40.25, 22.11, 4.30, 41.13),
    "knowrl": (50.23, 29.70, 15.17, 1.53, 27.42),
    "corver": (66.19, 45.48, 26.26, 3.91, 46.76),
}
# Table 18 (h:mm) of the two timed models, as seconds.
PAPER_TIMES = {"qwen3-4b": {"corver": 2 * 3600 + 60, "fspo": 10 * 3600 + 58 * 60},
               "qwen3-8b": {"corver": 3600 + 36 * 60, "fspo": 9 * 3600 + 4 * 60}}


def phases_for(total_s: float) -> dict[str, float]:
    """A plausible split of a total over the five timer phases."""
    return {"init": total_s * 0.02, "rollout": total_s * 0.5, "reward": total_s * 0.2,
            "update": total_s * 0.27, "save": total_s * 0.01}


def fill_paper_grid(root: Path, store: Path, popularity: bool = True) -> int:
    """Raw, CorVer and FSPO on two models, five sets (+ PopQA popularity), timed; returns row count."""
    scores = {"qwen3-4b": {"raw": (52.32, 24.82, 17.73, 2.96, 45.29), "fspo": (53.55, 26.79, 18.14, 3.37, 44.80),
                           "corver": (57.57, 31.86, 22.16, 4.23, 50.31)},
              "qwen3-8b": {"raw": (63.75, 30.94, 21.45, 3.01, 42.72), "fspo": (64.77, 32.24, 22.77, 3.91, 49.33),
                           "corver": (67.39, 36.87, 27.57, 4.92, 51.65)}}
    count = 0
    for model, methods in scores.items():
        for method, values in methods.items():
            seconds = PAPER_TIMES[model].get(method)
            run = make_run_dir(root, method=method, model=model,
                               scores={s: v / 100 for s, v in zip(FIVE, values)},
                               train_phases=phases_for(seconds) if seconds else None,
                               popularity=popularity and method != "knowrl")
            count += len(record_run(run, store))
        run = make_run_dir(root, method="corver", model=model, scores={"hotpotqa": {"em": 0.2, "f1": 0.3}},
                           train_phases=phases_for(3600))
        count += len(record_run(run, store))
        run = make_run_dir(root, method="raw", model=model, scores={"hotpotqa": {"em": 0.1, "f1": 0.2}})
        count += len(record_run(run, store))
    return count


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "lb.sqlite"


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    return tmp_path / "runs"
