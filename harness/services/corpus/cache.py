"""Persistent count cache: SQLite, shared by processes, keyed by (index, query, params).

- Only successful counts are stored (zero included); failures never are.
- WAL journal: readers never block, one writer at a time; a writer that finds the database
  busy waits (`busy_timeout`) and retries, so two trainers writing at once both succeed.
- Writes are `INSERT OR IGNORE`: a key's count is deterministic, the first writer wins.
- An in-process dict sits in front of SQLite; a hit there costs about a microsecond.
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Iterable

from ...core.sqlite_fs import configure as configure_journal

SCHEMA = 1
_CHUNK = 500  # keys per SELECT ... IN (...); SQLite's default variable limit is 32766
_MEMO_LIMIT = 1_000_000

Key = tuple[str, str]  # (query key, params key); the index hash is fixed per cache object


def query_key(clauses) -> str:
    """Canonical text of a CNF query: clause order and term order as given."""
    return json.dumps([list(c) for c in clauses], ensure_ascii=False, separators=(",", ":"))


def params_key(params: dict) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


class CountCache:
    """Counts of one index (by its manifest hash) in the SQLite file at `path`."""

    def __init__(self, path: str | os.PathLike, index_hash: str, query_version: str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # The query-construction version joins the index hash: the same term strings give
        # other counts when the rule that turns them into token ids changes.
        self.index_hash = f"{index_hash}|q{query_version}"
        self._memo: dict[Key, tuple[int, bool]] = {}
        self._local = threading.local()
        self._init_db()

    def _connect(self) -> sqlite3.Connection:
        # One connection per thread and per process: a connection must not cross a fork
        # (a trainer's data-loader workers), so a forked child opens its own.
        conn = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) != os.getpid():
            conn = None
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 60000")
            conn.execute("PRAGMA synchronous = NORMAL")
            self._local.conn = conn
            self._local.pid = os.getpid()
        return conn

    def _init_db(self) -> None:
        conn = self._connect()
        for attempt in range(50):
            try:
                configure_journal(conn, self.path, attempts=1)  # WAL; DELETE on a network file system
                conn.execute("CREATE TABLE IF NOT EXISTS counts (index_hash TEXT NOT NULL, query TEXT NOT NULL, "
                             "params TEXT NOT NULL, count INTEGER NOT NULL, approx INTEGER NOT NULL, "
                             "created REAL NOT NULL, PRIMARY KEY (index_hash, query, params)) WITHOUT ROWID")
                conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
                conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA),))
                return
            except sqlite3.OperationalError as err:  # "database is locked" while another creates it
                if "locked" not in str(err) or attempt == 49:
                    raise
                time.sleep(0.05 * (attempt + 1))

    def get_many(self, keys: Iterable[Key]) -> dict[Key, tuple[int, bool]]:
        """Cached (count, approx) for the keys that have one."""
        found: dict[Key, tuple[int, bool]] = {}
        missing: list[Key] = []
        for key in keys:
            hit = self._memo.get(key)
            if hit is None:
                missing.append(key)
            else:
                found[key] = hit
        if not missing:
            return found
        conn = self._connect()
        by_params: dict[str, list[str]] = {}
        for query, params in missing:
            by_params.setdefault(params, []).append(query)
        for params, queries in by_params.items():
            for i in range(0, len(queries), _CHUNK):
                chunk = queries[i:i + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(f"SELECT query, count, approx FROM counts WHERE index_hash = ? AND params = ? "
                                    f"AND query IN ({marks})", (self.index_hash, params, *chunk)).fetchall()
                for query, count, approx in rows:
                    found[(query, params)] = self._memo[(query, params)] = (int(count), bool(approx))
        return found

    def memo_get(self, key: Key) -> tuple[int, bool] | None:
        return self._memo.get(key)

    def put_many(self, items: dict[Key, tuple[int, bool]]) -> None:
        """Store successful counts (the caller never passes failures)."""
        if not items:
            return
        if len(self._memo) + len(items) > _MEMO_LIMIT:
            self._memo.clear()
        self._memo.update(items)
        now = time.time()
        rows = [(self.index_hash, q, p, int(c), int(a), now) for (q, p), (c, a) in items.items()]
        conn = self._connect()
        for attempt in range(20):
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR IGNORE INTO counts VALUES (?, ?, ?, ?, ?, ?)", rows)
                conn.execute("COMMIT")
                return
            except sqlite3.OperationalError as err:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if ("locked" not in str(err) and "busy" not in str(err)) or attempt == 19:
                    raise
                time.sleep(0.05 * (attempt + 1))

    def size(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM counts WHERE index_hash = ?",
                                       (self.index_hash,)).fetchone()[0]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
