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
    from factrl.harness.services.evidence import build_store

    out = root / "wiki.sqlite3"
    build_store(write_jsonl(root / "wiki.jsonl", articles), out, tokenizer="words", passage_tokens=12, force=False)
    return out


def judge_run_overrides(judge_url: str, store_path: Path, rows: list[dict], root: Path) -> list[str]:
    """`harness run` overrides of a judge-based method's test run: the scripted judge at
    `judge_url` (no key, no cache), the test store, `rows` as the pool (written to root/pool.json),
    and every output (runs, leaderboard store) under `root`."""
    pool = root / "pool.json"
    pool.write_text(json.dumps(rows))
    return ["judge=openai", f"judge.base_url={judge_url}", "judge.model=judge-test", "judge.api_key_env=null",
            "judge.cache=null", "evidence=file", f"evidence.store={store_path}", "pool=file", f"pool.path={pool}",
            "pool.dedup_against=[]", f"output_dir={root / 'runs'}", f"leaderboard.store={root / 'lb.sqlite'}"]
