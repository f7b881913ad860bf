"""Persistent SQLite cache of the judge's successful parses.

Only values a prompt's parser accepted are stored; failures (transport or parse) never are,
so a rerun asks again for exactly the items that failed. The key (`cache_key`) covers
everything that can change a reply: the endpoint (a base URL without credentials, or the
embedded model's identity, since its port changes every run), the served model, the prompt's
name and version, the sampling parameters and the rendered messages.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from ...core.sqlite_fs import configure as configure_journal

SCHEMA = 1
_MISSING = object()


def cache_key(*, endpoint: str, model: str, prompt: str, version: str, sampling: dict, messages: list) -> str:
    blob = json.dumps({"endpoint": endpoint, "model": model, "prompt": prompt, "version": version,
                       "sampling": sampling, "messages": messages}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class JudgeCache:
    """key -> JSON value; safe to share between threads and between processes (WAL)."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        configure_journal(self._db, self.path)  # WAL; DELETE on a network file system (harness/core/sqlite_fs.py)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS judge_cache (key TEXT PRIMARY KEY, prompt TEXT NOT NULL, "
                         "version TEXT NOT NULL, model TEXT NOT NULL, value TEXT NOT NULL, created TEXT NOT NULL)")
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA),))
        self._db.commit()

    def get(self, key: str) -> Any:
        """The cached value, or `MISSING` (a cached value may itself be falsy, e.g. [] facts)."""
        with self._lock:
            row = self._db.execute("SELECT value FROM judge_cache WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else _MISSING

    def put(self, key: str, value: Any, *, prompt: str, version: str, model: str) -> None:
        text = json.dumps(value, ensure_ascii=False)  # values are plain JSON by the prompt contract
        created = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO judge_cache VALUES (?, ?, ?, ?, ?, ?)",
                             (key, prompt, version, model, text, created))
            self._db.commit()

    def get_meta(self, name: str) -> str | None:
        """An endpoint record (e.g. whether it takes structured replies), or None."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return None if row is None else row[0]

    def put_meta(self, name: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, value))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


MISSING = _MISSING
