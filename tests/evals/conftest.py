"""Shared fixtures for the evaluator tests: offline hub, one thread, the shared data folder."""
from __future__ import annotations

from pathlib import Path

import pytest

# The shared benchmark files sit beside the repository (../shared), as in CI.
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "benchmarks"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def _offline_single_thread(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def shared() -> Path:
    if not (SHARED / "nq_open_validation.json").is_file():
        pytest.skip(f"the shared benchmark files are not in {SHARED.resolve()} (they sit beside the repo in CI)")
    return SHARED


@pytest.fixture(scope="session")
def fixtures() -> Path:
    return FIXTURES
