"""The leaderboard store: one SQLite file, one row per (run, evaluation set, version).

Why SQLite: a write is one transaction (all rows of a run or none), WAL mode lets readers
run beside a writer, and `BEGIN IMMEDIATE` with a busy timeout serialises concurrent
writers (eight `harness run` processes finishing together lose nothing). The validation
and the frozen-field check run inside the same write transaction as the insert, so two
writers can never both pin different values for one field. WAL needs a local file system;
on a network share the store falls back to SQLite's rollback journal (still atomic).

Tables:
    meta(key, value)                       store_schema
    rows(row_id, leaderboard_version, run_id, set_name, task, method, model, recorded, record)
    pins(version, key, value, row_id)      each row's frozen values (versions.frozen_fields)
"""
from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterable

from factrl.harness.errors import HarnessError

from . import rows as rowlib
from . import versions

STORE_SCHEMA = "factrl.leaderboard.store/1"
BUSY_TIMEOUT_S = 60.0

_DDL = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rows(
    row_id TEXT PRIMARY KEY,
    leaderboard_version TEXT NOT NULL,
    run_id TEXT NOT NULL,
    set_name TEXT NOT NULL,
    task TEXT NOT NULL,
    method TEXT NOT NULL,
    model TEXT NOT NULL,
    recorded TEXT NOT NULL,
    record TEXT NOT NULL,
    UNIQUE(run_id, set_name, leaderboard_version));
CREATE TABLE IF NOT EXISTS pins(
    version TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, row_id TEXT NOT NULL,
    PRIMARY KEY(version, key, row_id));
CREATE INDEX IF NOT EXISTS rows_by_version ON rows(leaderboard_version, model, method);
"""


class RowRefused(HarnessError):
    """A row failed validation or disagrees with its version; `reasons` lists why."""

    def __init__(self, reasons: list[str]):
        self.reasons = reasons
        super().__init__(" | ".join(reasons))


class Store:
    """A leaderboard store at `path` (created on the first write, never on a read)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    # -- connection -----------------------------------------------------------------------
    def _connect(self, create: bool) -> sqlite3.Connection:
        if not create and not self.path.is_file():
            raise HarnessError(f"no leaderboard store at {self.path}; record runs first "
                               "(`harness leaderboard add RUN_DIR`) or pass --store PATH.")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as err:
            raise HarnessError(f"cannot open leaderboard store {self.path}: {err}") from None
        conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        if create:
            self._init(conn)
        else:
            self._check_schema(conn)
        return conn

    def _init(self, conn: sqlite3.Connection) -> None:
        for attempt in range(50):
            try:
                conn.execute("PRAGMA journal_mode=WAL")  # returns the old mode on a network FS
                break
            except sqlite3.OperationalError:  # another process holds the lock while creating
                time.sleep(0.05 * (attempt + 1))
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in filter(str.strip, _DDL.split(";")):
                conn.execute(statement)
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('store_schema', ?)", (STORE_SCHEMA,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        self._check_schema(conn)

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        try:
            found = conn.execute("SELECT value FROM meta WHERE key='store_schema'").fetchone()
        except sqlite3.DatabaseError as err:
            raise HarnessError(f"{self.path} is not a leaderboard store ({err}); pass another --store.") from None
        if found is None or found[0] != STORE_SCHEMA:
            raise HarnessError(f"{self.path} has store schema {found[0] if found else None!r}, this harness "
                               f"reads {STORE_SCHEMA!r}; export it with the harness that wrote it.")

    # -- writes ---------------------------------------------------------------------------
    def add(self, new_rows: Iterable[dict[str, Any]]) -> list[str]:
        """Store rows in one transaction (all or none); returns their ids.

        Raises RowRefused with every reason when any row is invalid or disagrees with a
        frozen field of its version (in versions.py or pinned by earlier rows of this store).
        A row whose (run, set, version) is already stored replaces it.
        """
        batch = list(new_rows)
        if not batch:
            return []
        reasons = [f"{_label(r)}: {p}" for r in batch for p in rowlib.problems(r)]
        if reasons:
            raise RowRefused(reasons)
        conn = self._connect(create=True)
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for row in batch:
                    reasons += self._insert(conn, row)
                if reasons:
                    conn.execute("ROLLBACK")
                    raise RowRefused(reasons)
                conn.execute("COMMIT")
            except sqlite3.Error:
                conn.execute("ROLLBACK")
                raise
        finally:
            conn.close()
        return [r["row_id"] for r in batch]

    def _insert(self, conn: sqlite3.Connection, row: dict[str, Any]) -> list[str]:
        version, rid = row["leaderboard_version"], row["row_id"]
        pins = {key: versions.canonical(value) for key, value in versions.frozen_fields(row).items()}
        reasons = []
        for key, value in pins.items():
            clash = conn.execute("SELECT value, row_id FROM pins WHERE version=? AND key=? AND value<>? "
                                 "AND row_id<>? LIMIT 1", (version, key, value, rid)).fetchone()
            if clash:
                reasons.append(f"{_label(row)}: {key} = {value}, but version {version} in this store froze "
                               f"{clash[0]} (set by row {clash[1]}); record it under a new leaderboard "
                               "version (leaderboard/versions.py + CHANGELOG.md) or remove the old rows")
        if reasons:
            return reasons
        conn.execute("DELETE FROM pins WHERE row_id=?", (rid,))
        conn.executemany("INSERT INTO pins(version, key, value, row_id) VALUES (?, ?, ?, ?)",
                         [(version, k, v, rid) for k, v in pins.items()])
        conn.execute(
            "INSERT OR REPLACE INTO rows(row_id, leaderboard_version, run_id, set_name, task, method, model, "
            "recorded, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (rid, version, row["run"]["run_id"], row["set"]["name"], row["set"]["task"], row["method"]["name"],
             versions.model_key(row["model"]), dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
             json.dumps(row, sort_keys=True)))
        return []

    def remove(self, row_ids: Iterable[str]) -> int:
        """Delete rows (and the pins they set); returns how many existed."""
        ids = list(row_ids)
        conn = self._connect(create=False)
        try:
            conn.execute("BEGIN IMMEDIATE")
            removed = 0
            for rid in ids:
                removed += conn.execute("DELETE FROM rows WHERE row_id=?", (rid,)).rowcount
                conn.execute("DELETE FROM pins WHERE row_id=?", (rid,))
            conn.execute("COMMIT")
        finally:
            conn.close()
        return removed

    # -- reads ----------------------------------------------------------------------------
    def rows(self, version: str | None = None, **where: str | None) -> list[dict[str, Any]]:
        """Stored rows (full records), filtered by version and any of run_id, set_name,
        method, model, row_id; ordered by model, method, run, set."""
        allowed = {"run_id", "set_name", "method", "model", "row_id"}
        unknown = set(where) - allowed
        if unknown:
            raise TypeError(f"unknown filters {sorted(unknown)}; valid: {sorted(allowed)}")
        clauses, args = [], []
        if version is not None:
            clauses.append("leaderboard_version=?")
            args.append(str(version))
        for key, value in where.items():
            if value is None:
                continue
            if key == "model":  # a model name matches every weights pin of it (name@sha)
                clauses.append("(model=? OR substr(model, 1, length(?) + 1) = ? || '@')")
                args += [value, value, value]
            else:
                clauses.append(f"{key}=?")
                args.append(value)
        sql = "SELECT record, recorded FROM rows"
        sql += (" WHERE " + " AND ".join(clauses)) if clauses else ""
        sql += " ORDER BY model, method, run_id, set_name"
        conn = self._connect(create=False)
        try:
            found = conn.execute(sql, args).fetchall()
        finally:
            conn.close()
        out = []
        for record, recorded in found:
            row = json.loads(record)
            row["_recorded"] = recorded
            out.append(row)
        return out

    def versions(self) -> dict[str, int]:
        """{leaderboard version: row count} of what the store holds."""
        conn = self._connect(create=False)
        try:
            return dict(conn.execute("SELECT leaderboard_version, COUNT(*) FROM rows GROUP BY 1 ORDER BY 1"))
        finally:
            conn.close()

    def pins(self, version: str) -> dict[str, Any]:
        """{frozen field: value} that rows of `version` fixed in this store."""
        conn = self._connect(create=False)
        try:
            found = conn.execute("SELECT DISTINCT key, value FROM pins WHERE version=? ORDER BY key",
                                 (str(version),)).fetchall()
        finally:
            conn.close()
        return {key: json.loads(value) for key, value in found}


def _label(row: dict[str, Any]) -> str:
    try:
        return f"{row['run']['run_id']}/{row['set']['name']}"
    except (KeyError, TypeError):
        return "row"


def strip_private(row: dict[str, Any]) -> dict[str, Any]:
    """The row as validated (without the store's `_recorded` annotation)."""
    return {k: v for k, v in row.items() if not k.startswith("_")}
