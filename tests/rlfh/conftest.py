"""Fixtures for the RLFH tests: the KnowRL tests' evidence articles in a real store (SQLite /
FTS5, the `words` splitter), the embedded SmolLM2 tokenizer (a real byte-level BPE), and the
scripted judge server of tests/knowrl (reused, not copied)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.evidence_fixtures import build_test_store
from tests.knowrl.conftest import ARTICLES, ROWS  # noqa: F401 - ROWS is re-exported

__all__ = ["ARTICLES", "ROWS"]


@pytest.fixture(scope="session")
def store_path(tmp_path_factory) -> Path:
    return build_test_store(tmp_path_factory.mktemp("rlfh_store"), ARTICLES)


@pytest.fixture()
def store(store_path):
    from factrl.harness.evidence import open_store

    with open_store(store_path) as opened:
        yield opened


@pytest.fixture(scope="session")
def tokenizer():
    from factrl.harness import models
    from factrl.harness.config import compose

    cfg = compose(["model=smollm2-135m"]).model
    return models.load_tokenizer(models.resolve(cfg), cfg)
