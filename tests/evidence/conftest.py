"""Fixtures for the evidence store tests: small Wikipedia-like articles the tests write,
built into real SQLite/FTS5 stores (the `words` splitter keeps builds instant; one test
uses the embedded SmolLM2 tokenizer)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

ARTICLES = [
    {"title": "Paris", "text": "Paris is the capital and largest city of France. The city stands on the river Seine."},
    {"title": "Paris Hilton", "text": "Paris Hilton is an American media personality and businesswoman."},
    {"title": "Jean-Paul Sartre", "text": "Jean-Paul Sartre was a French philosopher, playwright and novelist. "
                                          "He declined the Nobel Prize in Literature in 1964."},
    {"title": "NEAR Shoemaker", "text": "NEAR Shoemaker was a robotic space probe that studied the asteroid Eros."},
    {"title": "Logical conjunction", "text": "In logic, AND is the truth-functional operator of conjunction; "
                                             "OR is disjunction and NOT is negation."},
    {"title": "C (programming language)", "text": "C is a general-purpose programming language. The caret ^ "
                                                  "means exclusive or, and * dereferences a pointer."},
    {"title": "Zürich", "text": "Zürich is the largest city in Switzerland, on the lake of Zürich."},
    {"title": "Mona Lisa", "text": " ".join(
        f"Sentence {i} about the Mona Lisa portrait by Leonardo da Vinci in the Louvre." for i in range(12))},
]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


@pytest.fixture(scope="session")
def articles_file(tmp_path_factory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("evidence") / "wiki.jsonl", ARTICLES)


@pytest.fixture(scope="session")
def store_path(tmp_path_factory, articles_file) -> Path:
    """The test articles in 32-word passages (the Mona Lisa article splits into several)."""
    from factrl.harness.services.evidence import build_store

    out = tmp_path_factory.mktemp("store") / "wiki.sqlite3"
    build_store(articles_file, out, tokenizer="words", passage_tokens=32, force=False)
    return out


@pytest.fixture()
def store(store_path):
    from factrl.harness.services.evidence import open_store

    with open_store(store_path) as opened:
        yield opened
