"""SQLite failures of the leaderboard store as one-line user errors naming the file and the fix.

A raw `sqlite3` traceback tells a user neither which file is meant nor what to do; and in
`harness run` an exception that is not a HarnessError is treated as a crash of the run.
Every `sqlite3.Error` the store meets goes through `store_error`, which classifies it by
SQLite's error name (Python 3.11+ `sqlite_errorname`, with the message as a fallback).
"""
from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Iterator

from factrl.harness.core.errors import DataError


class StoreError(DataError):
    """The store file cannot be used; `kind` is "locked", "corrupt", "access", "disk" or "sqlite"."""

    def __init__(self, message: str, kind: str, path: Path):
        self.kind, self.path = kind, path
        super().__init__(message)


def _kind(err: sqlite3.Error) -> str:
    name = str(getattr(err, "sqlite_errorname", "") or "")
    text = str(err).lower()
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text or "busy" in text:
        return "locked"
    if name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")) or "not a database" in text or "malformed" in text:
        return "corrupt"
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_AUTH")) \
            or "unable to open" in text or "readonly" in text:
        return "access"
    if name.startswith(("SQLITE_FULL", "SQLITE_IOERR")) or "disk" in text:
        return "disk"
    return "sqlite"


def store_error(path: Path, err: sqlite3.Error, busy_timeout_s: float) -> StoreError:
    """The one-line error for `err` raised while using the store at `path`."""
    kind = _kind(err)
    if kind == "locked":
        message = (f"leaderboard store {path} is locked: another writer holds it (waited {busy_timeout_s:g} s); "
                   "wait until that process finishes, then retry")
    elif kind == "corrupt":
        message = (f"leaderboard store {path} is corrupt or not an SQLite file ({err}); move it aside "
                   f"(mv {path} {path}.corrupt) and re-add the runs with `harness leaderboard add RUN_DIR "
                   f"--store {path}`")
    elif kind == "access":
        message = (f"cannot open or write leaderboard store {path} ({err}); check that its folder exists and is "
                   "writable, or pass another --store")
    elif kind == "disk":
        message = f"leaderboard store {path}: disk error ({err}); free space or check the file system, then retry"
    else:
        message = f"leaderboard store {path}: SQLite error ({err}); check the file, or pass another --store"
    return StoreError(message, kind, path)


@contextlib.contextmanager
def translated(path: Path, busy_timeout_s: float) -> Iterator[None]:
    """Re-raise any sqlite3.Error inside the block as a StoreError (without the traceback chain)."""
    try:
        yield
    except sqlite3.Error as err:
        raise store_error(path, err, busy_timeout_s) from None
