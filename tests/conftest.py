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
