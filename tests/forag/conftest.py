"""Fixtures for the FoRAG tests: a real evidence store the tests write (SQLite/FTS5, the `words`
splitter) and the embedded SmolLM2 tokenizer (a real fast tokenizer whose offsets round-trip).

Articles:
    Marie Curie    "Marie Curie was born in Warsaw. Marie Curie won two Nobel Prizes. ..."
    Ulm            "Albert Einstein was born in Ulm in 1879."
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.evidence_fixtures import build_test_store

ARTICLES = [
    {"title": "Marie Curie", "text": "Marie Curie was born in Warsaw. Marie Curie won two Nobel Prizes. "
                                     "She worked in Paris on radium and polonium with Pierre Curie for many years."},
    {"title": "Ulm", "text": "Albert Einstein was born in Ulm in 1879."},
]
ROWS = {
    "curie": {"id": "q-curie", "question": "Where was Marie Curie born?", "answers": ["Warsaw"],
              "title": "Marie Curie"},
    "einstein": {"id": "q-ulm", "question": "Where was Albert Einstein born?", "answers": ["Ulm"], "title": "Ulm"},
    "nowhere": {"id": "q-none", "question": "Who wrote Hamlet?", "answers": ["Shakespeare"],
                "title": "William Shakespeare"},  # not in the store: no evidence
}


@pytest.fixture(scope="session")
def store_path(tmp_path_factory) -> Path:
    return build_test_store(tmp_path_factory.mktemp("forag_store"), ARTICLES)


@pytest.fixture()
def store(store_path):
    from factrl.harness.services.evidence import open_store

    with open_store(store_path, fuzzy_titles=False) as opened:
        yield opened


@pytest.fixture(scope="session")
def tokenizer():
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose

    cfg = compose(["model=smollm2-135m"]).model
    return models.load_tokenizer(models.resolve(cfg), cfg)


def judge_cfg(url: str, **overrides):
    return {"backend": "openai", "base_url": url, "model": "judge-test", "api_key_env": None, "timeout": 2.0,
            "max_retries": 0, "concurrency": 8, "max_reasks": 1, "temperature": 0.0, "max_tokens": 256,
            "cache": None, "max_failed_share": 1.0, **overrides}
