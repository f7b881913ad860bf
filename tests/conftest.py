"""Test-wide settings: one thread, no hub, a shared harness cache, and the shared data path.

Thread and hub variables are set at import time, before any test imports torch: torch's
spinning OpenMP threads make steps ~100x slower when anything else runs on the machine.
"""
from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the repository (CI and the dev machine have it; a clone may not)."""
    path = SHARED / "data"
    if not path.is_dir():
        pytest.skip(f"reference data not found at {path} (only CI and the project machine have ../shared)")
    return path


@pytest.fixture(autouse=True)
def _one_thread():
    try:
        import torch
    except ImportError:  # pragma: no cover
        yield
        return
    torch.set_num_threads(1)
    yield


# What a test must never write into the checkout: the default leaderboard store and run folders
# (a `harness run` without `leaderboard.store=` / `output_dir=` would, and `make run` would then
# find a test's row frozen into its store).
_CHECKOUT_OUTPUTS = ("leaderboard.sqlite", "runs", "multirun")


def _stamps() -> dict[str, int | None]:
    return {name: (REPO / name).stat().st_mtime_ns if (REPO / name).exists() else None
            for name in _CHECKOUT_OUTPUTS}


@pytest.fixture(autouse=True)
def _no_writes_into_the_checkout():
    before = _stamps()
    yield
    changed = [name for name, stamp in _stamps().items() if stamp != before[name]]
    assert not changed, (f"this test wrote {', '.join(changed)} in the checkout ({REPO}); give its harness "
                         f"commands output_dir= and leaderboard.store= (or leaderboard=rundir) under tmp_path")
