"""The one atomic writer (harness/core/rundir.py): whole files only, mode 0644, nothing left behind."""
from __future__ import annotations

import os

import pytest

from factrl.harness.core.rundir import atomic_path, atomic_write, write_json


def test_text_bytes_and_a_writer_function_land_whole_with_mode_0644(tmp_path):
    assert atomic_write(tmp_path / "a" / "x.txt", "hello").read_text() == "hello"
    assert atomic_write(tmp_path / "b.bin", b"\x00\x01").read_bytes() == b"\x00\x01"
    atomic_write(tmp_path / "c.jsonl", lambda handle: handle.write("1\n2\n"))
    write_json(tmp_path / "d.json", {"k": 1})
    for name in ("a/x.txt", "b.bin", "c.jsonl", "d.json"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644, name  # not mkstemp's 0600
    assert atomic_write(tmp_path / "e.txt", "x", mode=0o600).stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp files


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "keep.txt"
    target.write_text("old")

    def boom(handle):
        handle.write("half")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        atomic_write(target, boom)
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["keep.txt"]


def test_atomic_path_swaps_a_built_folder_in_or_removes_it(tmp_path):
    with atomic_path(tmp_path / "model") as tmp:
        tmp.mkdir()
        (tmp / "weights").write_text("w")
    assert (tmp_path / "model" / "weights").read_text() == "w"
    with pytest.raises(RuntimeError):
        with atomic_path(tmp_path / "store.sqlite3") as tmp:
            tmp.write_text("partial")
            raise RuntimeError("build failed")
    assert sorted(os.listdir(tmp_path)) == ["model"]
