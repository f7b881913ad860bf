"""A small real evidence store (SQLite FTS5, the `words` splitter, 12-token passages) built from
articles a test writes: the shared body of the judge-based methods' `store_path` fixtures."""
from __future__ import annotations

import json
from pathlib import Path


def write_jsonl(path: Path, records: list[dict]) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    return path


def build_test_store(root: Path, articles: list[dict]) -> Path:
    from factrl.harness.evidence import build_store

    out = root / "wiki.sqlite3"
    build_store(write_jsonl(root / "wiki.jsonl", articles), out, tokenizer="words", passage_tokens=12)
    return out
