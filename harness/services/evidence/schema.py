"""The evidence store's SQLite layout, its manifest and the manifest hash.

Tables (FORMAT_VERSION 1):
- `passages(passage_id INTEGER PRIMARY KEY, title, text, doc_index, chunk)`: passage_id
  counts from 1 in build order, doc_index numbers documents, chunk the passage within one;
- `passages_fts`: FTS5 over (title, text), external content = `passages` (no second copy);
- `manifest(key, value)`: one JSON value per key (see build.py for what is recorded).
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.errors import DataError

FORMAT_VERSION = 1
# remove_diacritics 2: "Zurich" finds "Zürich" (also for code points where 1 misses it).
FTS_TOKENIZE = "unicode61 remove_diacritics 2"
# Keys that do not change what retrieval returns, so they stay out of the hash.
_UNHASHED = ("created", "build_seconds", "manifest_hash")
BUILD_HINT = "`harness evidence build --demo` or `harness evidence build FILE.jsonl --out PATH`"


def create_tables(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE manifest (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("CREATE TABLE passages (passage_id INTEGER PRIMARY KEY, title TEXT NOT NULL, text TEXT NOT NULL, "
                 "doc_index INTEGER NOT NULL, chunk INTEGER NOT NULL)")
    conn.execute("CREATE INDEX passages_title ON passages (title)")
    conn.execute("CREATE INDEX passages_title_nocase ON passages (title COLLATE NOCASE)")
    conn.execute(f"CREATE VIRTUAL TABLE passages_fts USING fts5(title, text, content='passages', "
                 f"content_rowid='passage_id', tokenize='{FTS_TOKENIZE}')")


def manifest_hash(manifest: dict[str, Any]) -> str:
    """SHA-256 of what changes retrieval results: format, split rule, tokenizer, passage size,
    FTS settings, counts and the passages' content (not paths, times or the source file's
    own bytes beyond its content)."""
    tok = {k: v for k, v in manifest["tokenizer"].items() if k not in ("name_or_path", "spec")}
    hashed = {"format_version": manifest["format_version"], "split_version": manifest["split_version"],
              "tokenizer": tok, "passage_tokens": manifest["passage_tokens"], "fts": manifest["fts"],
              "counts": manifest["counts"], "content_sha256": manifest["content_sha256"]}
    return hashlib.sha256(json.dumps(hashed, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


@dataclass(frozen=True)
class Manifest:
    """A store's manifest: `data` is the JSON object; `path` the store file."""

    path: Path
    data: dict[str, Any]

    @property
    def manifest_hash(self) -> str:
        return str(self.data["manifest_hash"])

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.data)


def connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection (URI mode: a missing file is an error, never a new empty one)."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)


def read_manifest(path: str | Path, conn: sqlite3.Connection | None = None) -> Manifest:
    """The manifest of the store at `path`; DataError naming the path and the fix otherwise."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"evidence store {path} does not exist; build it with {BUILD_HINT}.")
    own = conn is None
    try:
        conn = conn or connect_readonly(path)
        rows = conn.execute("SELECT key, value FROM manifest").fetchall()
    except sqlite3.DatabaseError as err:
        raise DataError(f"evidence store {path} is not an evidence store ({err}); rebuild it with {BUILD_HINT} "
                        f"--force.") from None
    finally:
        if own and conn is not None:
            conn.close()
    data = {key: json.loads(value) for key, value in rows}
    if not data:
        raise DataError(f"evidence store {path} has no manifest (an interrupted or foreign build); rebuild it "
                        f"with {BUILD_HINT} --force.")
    if data.get("format_version") != FORMAT_VERSION:
        raise DataError(f"evidence store {path} has format {data.get('format_version')}, this harness reads "
                        f"{FORMAT_VERSION}; rebuild it with {BUILD_HINT} --force.")
    return Manifest(path.resolve(), data)
