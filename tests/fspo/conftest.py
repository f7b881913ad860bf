"""Fixtures for the FSPO tests: the tiny-llama (Llama-2) tokenizer, a real evidence store
the tests write, and a tiny random HHEM-shaped checkpoint (tests/nli/tiny_models.py)."""
from __future__ import annotations

import json

import pytest

ARTICLES = [
    {"title": "Paris", "text": "Paris is the capital and largest city of France. The city lies on the Seine."},
    {"title": "Eiffel Tower", "text": "The Eiffel Tower was built in 1889 in Paris."},
]
QUESTION = "What is the capital of France?"


@pytest.fixture(scope="session")
def llama_tokenizer():
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose

    cfg = compose(["model=tiny-llama"]).model
    return models.load_tokenizer(models.resolve(cfg), cfg)


@pytest.fixture(scope="session")
def store_path(tmp_path_factory):
    """The two articles above in a real SQLite/FTS5 store (word-level passages: instant)."""
    from factrl.harness.services.evidence import build_store

    root = tmp_path_factory.mktemp("fspo_evidence")
    source = root / "wiki.jsonl"
    source.write_text("".join(json.dumps(a) + "\n" for a in ARTICLES), encoding="utf-8")
    build_store(source, root / "wiki.sqlite3", tokenizer="words", passage_tokens=64, force=False)
    return root / "wiki.sqlite3"


@pytest.fixture()
def store(store_path):
    from factrl.harness.services.evidence import open_store

    with open_store(store_path) as opened:
        yield opened


@pytest.fixture(scope="session")
def tiny_hhem(tmp_path_factory):
    """(hhem_dir, foundation_dir): a random HHEM-2.1-shaped checkpoint with its remote code."""
    from tests.nli.tiny_models import build_hhem, build_t5_foundation

    root = tmp_path_factory.mktemp("fspo_hhem")
    foundation = build_t5_foundation(root / "flan-t5")
    return build_hhem(root / "hhem", foundation), foundation


def row(title: str = "Paris", row_id: str = "1") -> dict:
    return {"id": row_id, "question": QUESTION, "answers": ["Paris"], "title": title}
