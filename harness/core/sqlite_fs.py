"""SQLite journal mode by file system: WAL on local disks, DELETE on network file systems.

The writable caches (judge answers harness/services/judge/cache.py, evaluation responses evals/cache.py,
corpus counts harness/services/corpus/cache.py) use WAL so that concurrent runs read while one writes. WAL
keeps its index in shared memory (a `-shm` file mapped by every connection), which network file
systems (NFS, Lustre, GPFS, CIFS, ...) do not share between machines: two nodes writing one WAL
database over NFS can corrupt it. So `journal_mode(path)` picks DELETE (the rollback journal,
which needs only file locks) for a database on a network file system, and `configure` switches
a connection to it, retrying while another process holds the lock, and warns once with the
better fix: a node-local folder per job for the writable caches (HARNESS_WRITABLE_CACHE, see
models.writable_cache_dir and docs/CLUSTER.md). HARNESS_SQLITE_JOURNAL=wal|delete overrides the
detection. The file system is read from /proc/self/mounts (Linux); elsewhere WAL is kept.
"""
from __future__ import annotations

import logging
import os
import sqlite3
import time
from pathlib import Path


log = logging.getLogger("factrl.sqlite")

NETWORK_FS = frozenset({
    "nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph", "fuse.ceph",
    "glusterfs", "fuse.glusterfs", "fuse.sshfs", "sshfs", "9p", "afs", "orangefs", "pvfs2", "panfs", "wekafs",
    "fuse.gcsfuse", "fuse.s3fs", "fuse.rclone", "fuse.juicefs", "virtiofs",
})
_warned: set[str] = set()


def _unescape(field: str) -> str:
    """/proc/mounts writes spaces, tabs, newlines and backslashes as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def file_system(path: str | os.PathLike, mounts: str | None = None) -> str | None:
    """The type of the file system holding `path` (the longest mount point above it), or None."""
    if mounts is None:
        try:
            mounts = Path("/proc/self/mounts").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    target = os.path.realpath(os.path.abspath(os.fspath(path)))
    best, kind = "", None
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        point = _unescape(parts[1]).rstrip("/") or "/"
        inside = target == point or target.startswith(point if point.endswith("/") else point + "/")
        if inside and len(point) >= len(best):
            best, kind = point, parts[2]
    return kind


def journal_mode(path: str | os.PathLike, mounts: str | None = None) -> str:
    """"wal", or "delete" for a database on a network file system (module docstring)."""
    forced = os.environ.get("HARNESS_SQLITE_JOURNAL", "").strip().lower()
    if forced in ("wal", "delete"):
        return forced
    kind = file_system(Path(path).parent, mounts)
    return "delete" if kind in NETWORK_FS else "wal"


def configure(conn: sqlite3.Connection, path: str | os.PathLike, *, attempts: int = 50) -> str:
    """Set the journal mode `journal_mode(path)` picks on `conn`; returns the mode in force."""
    mode = journal_mode(path)
    if mode == "delete" and str(path) not in _warned:
        _warned.add(str(path))
        log.warning("%s is on a network file system (%s): SQLite's WAL does not work there, so this cache uses "
                    "journal_mode=DELETE (slower, and only as safe as the file system's locks); give each job a "
                    "node-local cache with HARNESS_WRITABLE_CACHE=$TMPDIR/factrl-cache (docs/CLUSTER.md)",
                    path, file_system(Path(path).parent) or os.environ.get("HARNESS_SQLITE_JOURNAL"))
    for attempt in range(attempts):
        try:
            return str(conn.execute(f"PRAGMA journal_mode = {mode.upper()}").fetchone()[0]).lower()
        except sqlite3.OperationalError as err:  # "database is locked" while another process switches it
            if "locked" not in str(err) or attempt == attempts - 1:
                raise
            time.sleep(min(1.0, 0.05 * (attempt + 1)))
    return mode  # pragma: no cover
