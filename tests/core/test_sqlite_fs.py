"""The writable SQLite caches on network file systems (harness/core/sqlite_fs.py): the file system is
read from the mount table, a network one switches the judge, evaluation and corpus caches from
WAL to DELETE journaling (real SQLite), and HARNESS_WRITABLE_CACHE moves them to a node-local folder."""
from __future__ import annotations

import sqlite3

import pytest

from factrl.harness.core import sqlite_fs

MOUNTS = "\n".join([
    "/dev/nvme0n1p2 / ext4 rw,relatime 0 0",
    "fileserver:/export/home /home nfs4 rw,relatime,vers=4.2 0 0",
    "/dev/nvme1n1 /home/alice/local\\040scratch xfs rw 0 0",
    "tmpfs /tmp tmpfs rw 0 0",
    "lustre@tcp:/scratch /scratch lustre rw 0 0",
])


@pytest.mark.parametrize("path, kind", [
    ("/home/alice/.cache/factrl-harness", "nfs4"), ("/home/alice/local scratch/cache", "xfs"),
    ("/home", "nfs4"), ("/homework/x", "ext4"), ("/tmp/job1", "tmpfs"), ("/scratch/runs", "lustre"),
])
def test_the_file_system_is_the_longest_mount_above_the_path(path, kind):
    assert sqlite_fs.file_system(path, MOUNTS) == kind


def test_network_file_systems_get_delete_journaling(monkeypatch):
    monkeypatch.delenv("HARNESS_SQLITE_JOURNAL", raising=False)
    assert sqlite_fs.journal_mode("/home/alice/.cache/judge/cache.sqlite3", MOUNTS) == "delete"
    assert sqlite_fs.journal_mode("/scratch/cache.sqlite3", MOUNTS) == "delete"
    assert sqlite_fs.journal_mode("/tmp/job1/cache.sqlite3", MOUNTS) == "wal"
    monkeypatch.setenv("HARNESS_SQLITE_JOURNAL", "wal")  # the override, both ways
    assert sqlite_fs.journal_mode("/home/alice/x.sqlite3", MOUNTS) == "wal"
    monkeypatch.setenv("HARNESS_SQLITE_JOURNAL", "delete")
    assert sqlite_fs.journal_mode("/tmp/x.sqlite3", MOUNTS) == "delete"


def test_this_machine_mount_table_is_read(tmp_path):
    if not sqlite_fs.Path("/proc/self/mounts").is_file():
        pytest.skip("no /proc/self/mounts (not Linux)")
    assert sqlite_fs.file_system(tmp_path) is not None


def _mode(path) -> str:
    with sqlite3.connect(path) as conn:
        return conn.execute("PRAGMA journal_mode").fetchone()[0]


@pytest.mark.parametrize("forced", ["delete", None])
def test_the_three_writable_caches_follow_the_file_system(tmp_path, monkeypatch, forced):
    from factrl.evals.backends.base import Generation
    from factrl.evals.cache import ResponseCache
    from factrl.harness.services.corpus.cache import CountCache
    from factrl.harness.services.judge.cache import JudgeCache

    if forced:
        monkeypatch.setenv("HARNESS_SQLITE_JOURNAL", forced)  # as detection decides for an NFS home
    else:
        monkeypatch.delenv("HARNESS_SQLITE_JOURNAL", raising=False)
        if sqlite_fs.journal_mode(tmp_path / "x") != "wal":
            pytest.skip("this machine's temporary folder is on a network file system")
    expected = forced or "wal"
    judge = JudgeCache(tmp_path / "judge.sqlite3")
    judge.put("k", [1], prompt="p", version="1", model="m")
    assert judge.get("k") == [1]
    responses = ResponseCache(tmp_path / "eval.sqlite", {"model": "m"})
    responses.put(responses.key("sys", "q"), Generation("an answer", "stop", 2))
    counts = CountCache(tmp_path / "counts.sqlite3", "index", "1")
    counts.put_many({('[["the"]]', "{}"): (3, False)})
    assert counts.get_many([('[["the"]]', "{}")]) == {('[["the"]]', "{}"): (3, False)}
    for name in ("judge.sqlite3", "eval.sqlite", "counts.sqlite3"):
        assert _mode(tmp_path / name) == expected, name
    if forced:
        assert not list(tmp_path.glob("*-wal")) and not list(tmp_path.glob("*-shm"))


def test_the_writable_caches_go_where_harness_writable_cache_says(tmp_path, monkeypatch):
    from factrl.harness.services import models

    monkeypatch.delenv("HARNESS_WRITABLE_CACHE", raising=False)
    assert models.writable_cache_dir() == models.cache_dir()
    monkeypatch.setenv("HARNESS_WRITABLE_CACHE", str(tmp_path / "node-local"))
    assert models.writable_cache_dir() == tmp_path / "node-local" and (tmp_path / "node-local").is_dir()
    assert models.cache_dir() != tmp_path / "node-local"  # the shared artefacts stay where they are
