"""A response cache for greedy generations, shared across runs (SQLite under the harness cache).

The key covers everything that can change a completion: the backend and its settings, the
model id, revision and weight hash, the adapter hash, the system prompt, the question and the
decoding preset. Sampled generations are never cached: a cache hit would silently replace a
fresh sample with an old one. Only the main thread touches the database.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from factrl.harness.core.sqlite_fs import configure as configure_journal

from .backends.base import Generation


class ResponseCache:
    def __init__(self, path: Path, scope: dict):
        """scope: the request-independent part of the key (backend, model, adapter, decoding)."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._scope = json.dumps(scope, sort_keys=True, default=str)
        self._db = sqlite3.connect(self.path, timeout=30)
        # WAL: concurrent runs read while one writes; DELETE on a network file system (harness/core/sqlite_fs.py).
        configure_journal(self._db, self.path)
        self._db.execute("PRAGMA synchronous=NORMAL")  # a lost last entry only costs a regeneration
        self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, "
                         "finish_reason TEXT, n_tokens INTEGER)")
        self.hits = self.misses = 0

    def key(self, system: str, question: str) -> str:
        blob = json.dumps([self._scope, system, question], ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> Generation | None:
        row = self._db.execute("SELECT text, finish_reason, n_tokens FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return Generation(*row)

    def put(self, key: str, generation: Generation) -> None:
        self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                         (key, generation.text, generation.finish_reason, generation.n_tokens))
        self._db.commit()

    def close(self) -> None:
        self._db.close()
