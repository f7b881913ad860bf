"""The leaderboard store: one SQLite file, one row per (run, evaluation set, version).

Why SQLite: a write is one transaction (all rows of a run or none), WAL mode lets readers
run beside a writer, and `BEGIN IMMEDIATE` with a busy timeout serialises concurrent
writers (eight `harness run` processes finishing together lose nothing). The validation,
the frozen-field check and the comparison with already stored rows run inside the same
write transaction as the insert, so two writers can never both pin different values for one
field. WAL needs every process that opens the store to be on one host with a local file
system: SQLite's WAL does not work over a network file system, and the store neither detects
one nor falls back to another journal mode. Keep the store on a local disk (a store shared by
several machines is a separate design).

A re-add never silently changes a result: a row whose content equals the stored one is
"unchanged" (nothing is written), a different row for a stored (run, set, version) is refused
with the fields that differ unless `replace=True`, and an input holding the same row twice is
refused. Every SQLite failure is a one-line StoreError (store/errors.py).

Tables:
    meta(key, value)                       store_schema
    rows(row_id, leaderboard_version, run_id, set_name, task, method, model, recorded, record)
    pins(version, key, value, row_id)      each row's frozen values (versions.frozen_fields)
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from factrl.harness.core.errors import DataError, HarnessError

from . import rows as rowlib
from . import versions
from .errors import StoreError, translated

STORE_SCHEMA = "factrl.leaderboard.store/1"
BUSY_TIMEOUT_S = 60.0  # read at each connection, so a test (or a caller) can shorten it

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
    """Rows failed validation, disagree with their version or with stored rows; `reasons` lists why.

    `replaceable` is true when every reason is a stored row with different content, i.e.
    when `--replace` (`replace=True`) would store the input. `frozen` lists each clash with a
    value this store's version froze: {"row", "set", "field", "new", "stored", "version"}."""

    def __init__(self, reasons: list[str], replaceable: bool = False, frozen: list[dict] | None = None):
        self.reasons = reasons
        self.replaceable = replaceable
        self.frozen = frozen or []
        super().__init__(" | ".join(reasons))

    def frozen_summary(self) -> str:
        """The frozen clashes in one short clause, e.g. "eval.limit = 8, but version 1 of this
        store froze 4 (sets demo, popqa)"; "" when there are none."""
        grouped: dict[str, tuple[dict, list[str]]] = {}
        for item in self.frozen:
            key = json.dumps([item["field"], item["new"], item["stored"], item["version"]])
            sets = grouped.setdefault(key, (item, []))[1]
            if item["set"] not in sets:
                sets.append(item["set"])
        return "; ".join(f"{item['field']} = {item['new']}, but version {item['version']} of this store froze "
                         f"{item['stored']} (set{'s' if len(sets) > 1 else ''} {', '.join(sets)})"
                         for item, sets in grouped.values())


@dataclass
class AddReport:
    """What `Store.add` did with each row of its input, in input order."""

    path: Path
    outcomes: dict[str, str] = field(default_factory=dict)  # row_id -> added | replaced | unchanged

    def _having(self, outcome: str) -> list[str]:
        return [rid for rid, done in self.outcomes.items() if done == outcome]

    @property
    def ids(self) -> list[str]:
        return list(self.outcomes)

    @property
    def added(self) -> list[str]:
        return self._having("added")

    @property
    def replaced(self) -> list[str]:
        return self._having("replaced")

    @property
    def unchanged(self) -> list[str]:
        return self._having("unchanged")

    def summary(self) -> str:
        """e.g. "added 2 row(s), replaced 0, unchanged 1" (true counts of what was stored)."""
        return f"added {len(self.added)} row(s), replaced {len(self.replaced)}, unchanged {len(self.unchanged)}"


class Store:
    """A leaderboard store at `path` (created on the first write, never on a read)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    # -- connection -----------------------------------------------------------------------
    @contextlib.contextmanager
    def _session(self, create: bool) -> Iterator[sqlite3.Connection]:
        """A checked connection; any SQLite failure inside becomes a one-line StoreError."""
        if not create and not self.path.is_file():
            raise HarnessError(f"no leaderboard store at {self.path}; record runs first "
                               "(`harness leaderboard add RUN_DIR`) or pass --store PATH.")
        if create:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise StoreError(f"cannot create the folder of leaderboard store {self.path} ({err}); "
                                 "pass another --store", "access", self.path) from None
        timeout = float(BUSY_TIMEOUT_S)
        with translated(self.path, timeout):
            conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
            try:
                conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
                if create:
                    self._init(conn, timeout)
                else:
                    self._check_schema(conn)
                yield conn
            finally:
                conn.close()

    def _init(self, conn: sqlite3.Connection, timeout: float) -> None:
        # Switching to WAL needs a moment without other connections; retry within the busy
        # timeout. PRAGMA journal_mode returns the mode in force (no fallback is attempted).
        deadline = time.monotonic() + timeout
        attempt = 0
        while conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError:
                attempt += 1
                if time.monotonic() > deadline:
                    raise
                time.sleep(min(0.05 * attempt, 1.0))
        conn.execute("PRAGMA synchronous=FULL")
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "meta" not in tables:  # never turn another program's database into a store
            raise DataError(f"{self.path} is an SQLite database but not a leaderboard store (tables: "
                            f"{', '.join(sorted(tables))}); pass another --store.")
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in filter(str.strip, _DDL.split(";")):
                conn.execute(statement)
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('store_schema', ?)", (STORE_SCHEMA,))
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise
        self._check_schema(conn)

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        try:
            found = conn.execute("SELECT value FROM meta WHERE key='store_schema'").fetchone()
        except sqlite3.OperationalError as err:
            if "no such table" not in str(err):
                raise
            raise DataError(f"{self.path} is not a leaderboard store ({err}); pass another --store.") from None
        if found is None or found[0] != STORE_SCHEMA:
            raise DataError(f"{self.path} has store schema {found[0] if found else None!r}, this harness "
                            f"reads {STORE_SCHEMA!r}; export it with the harness that wrote it.")

    # -- writes ---------------------------------------------------------------------------
    def add(self, new_rows: Iterable[dict[str, Any]], replace: bool = False) -> AddReport:
        """Store rows in one transaction (all or none); returns what happened to each.

        Raises RowRefused with every reason when any row is invalid, appears twice in the
        input, disagrees with a frozen field of its version (in versions.py or pinned by
        earlier rows of this store), or differs from the stored row of its (run, set,
        version) while `replace` is false. A row equal to the stored one is left as is.
        """
        batch = list(new_rows)
        report = AddReport(self.path)
        if not batch:
            return report
        reasons = [f"{_label(r)}: {p}" for r in batch for p in rowlib.problems(r)]
        if reasons:
            raise RowRefused(reasons)
        reasons = _duplicates(batch)
        if reasons:
            raise RowRefused(reasons)
        conflicts, frozen = 0, []
        with self._session(create=True) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for row in batch:
                    outcome, why = self._insert(conn, row, replace, frozen)
                    report.outcomes[row["row_id"]] = outcome
                    reasons += why
                    conflicts += outcome == "conflict"
            except BaseException:
                _rollback(conn)
                raise
            if reasons:
                _rollback(conn)
                raise RowRefused(reasons, replaceable=conflicts == len(reasons), frozen=frozen)
            conn.execute("COMMIT")
        return report

    def _insert(self, conn: sqlite3.Connection, row: dict[str, Any], replace: bool,
                frozen: list[dict]) -> tuple[str, list[str]]:
        """(outcome, reasons): outcome is added | replaced | unchanged | conflict | refused;
        each clash with a frozen value is also appended to `frozen` (RowRefused.frozen)."""
        version, rid = row["leaderboard_version"], row["row_id"]
        stored = conn.execute("SELECT record FROM rows WHERE row_id=?", (rid,)).fetchone()
        outcome = "added"
        if stored is not None:
            old = json.loads(stored[0])
            changed = rowlib.content_differences(old, row)
            if not changed:
                return "unchanged", []
            if not replace:
                return "conflict", [f"{_label(row)}: already stored (version {version}) with different content "
                                    f"({'; '.join(changed)}); pass --replace to overwrite it"]
            outcome = "replaced"
        pins = {key: versions.canonical(value) for key, value in versions.frozen_fields(row).items()}
        reasons = []
        for key, value in pins.items():
            clash = conn.execute("SELECT value, row_id FROM pins WHERE version=? AND key=? AND value<>? "
                                 "AND row_id<>? LIMIT 1", (version, key, value, rid)).fetchone()
            if clash:
                parts = versions.pin_differences(key, value, clash[0])
                frozen += [{"row": rid, "set": row["set"]["name"], "field": what, "new": new, "stored": old,
                            "version": version} for what, new, old in parts]
                differ = "; ".join(f"{what} = {new}, frozen {old}" for what, new, old in parts)
                reasons.append(f"{_label(row)}: {key}: {differ} (version {version} in this store, set by row "
                               f"{clash[1]}); record it into another store (--store PATH), or under a new "
                               "leaderboard version (leaderboard/store/versions.py + CHANGELOG.md), or remove the old rows")
        if reasons:
            return "refused", reasons
        conn.execute("DELETE FROM pins WHERE row_id=?", (rid,))
        conn.executemany("INSERT INTO pins(version, key, value, row_id) VALUES (?, ?, ?, ?)",
                         [(version, k, v, rid) for k, v in pins.items()])
        conn.execute(
            "INSERT OR REPLACE INTO rows(row_id, leaderboard_version, run_id, set_name, task, method, model, "
            "recorded, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (rid, version, row["run"]["run_id"], row["set"]["name"], row["set"]["task"], row["method"]["name"],
             versions.model_key(row["model"]), dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
             json.dumps(row, sort_keys=True)))
        return outcome, []

    def remove(self, row_ids: Iterable[str]) -> int:
        """Delete rows (and the pins they set); returns how many existed."""
        ids = list(row_ids)
        with self._session(create=False) as conn:
            conn.execute("BEGIN IMMEDIATE")
            removed = 0
            for rid in ids:
                removed += conn.execute("DELETE FROM rows WHERE row_id=?", (rid,)).rowcount
                conn.execute("DELETE FROM pins WHERE row_id=?", (rid,))
            conn.execute("COMMIT")
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
        with self._session(create=False) as conn:
            found = conn.execute(sql, args).fetchall()
        out = []
        for record, recorded in found:
            row = json.loads(record)
            row["_recorded"] = recorded
            out.append(row)
        return out

    def versions(self) -> dict[str, int]:
        """{leaderboard version: row count} of what the store holds."""
        with self._session(create=False) as conn:
            return dict(conn.execute("SELECT leaderboard_version, COUNT(*) FROM rows GROUP BY 1 ORDER BY 1"))

    def pins(self, version: str) -> dict[str, Any]:
        """{frozen field: value} that rows of `version` fixed in this store."""
        with self._session(create=False) as conn:
            found = conn.execute("SELECT DISTINCT key, value FROM pins WHERE version=? ORDER BY key",
                                 (str(version),)).fetchall()
        return {key: json.loads(value) for key, value in found}


def _rollback(conn: sqlite3.Connection) -> None:
    """Undo the open transaction; a failure here must not hide the error that caused it."""
    with contextlib.suppress(sqlite3.Error):
        conn.execute("ROLLBACK")


def _label(row: dict[str, Any]) -> str:
    try:
        return f"{row['run']['run_id']}/{row['set']['name']}"
    except (KeyError, TypeError):
        return "row"


def _duplicates(batch: list[dict[str, Any]]) -> list[str]:
    """Reasons for rows that share a row id (the same run and set) within one input."""
    seen: dict[str, list[dict[str, Any]]] = {}
    for row in batch:
        seen.setdefault(row["row_id"], []).append(row)
    reasons = []
    for copies in seen.values():
        if len(copies) > 1:
            same = all(not rowlib.content_differences(copies[0], c, limit=1) for c in copies[1:])
            reasons.append(f"{_label(copies[0])}: appears {len(copies)} times in this input "
                           f"({'identical copies' if same else 'with different content'}); an input holds one "
                           "row per (run, set): remove the extra copies")
    return reasons


def strip_private(row: dict[str, Any]) -> dict[str, Any]:
    """The row as validated (without the store's `_recorded` annotation)."""
    return {k: v for k, v in row.items() if not k.startswith("_")}
