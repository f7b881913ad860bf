"""Bytes that are not UTF-8, in a file or on the command line, are one line naming where
(file:line and byte, or the argument and byte), never a traceback, for `evidence build`,
`evidence query`, `judge ask` and `grid` (as the pool loader already answered)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.helpers import REPO

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _harness(*args: str | bytes) -> subprocess.CompletedProcess:
    """The real CLI with raw argv bytes, as a shell passes them."""
    argv = [a if isinstance(a, bytes) else a.encode() for a in args]
    return subprocess.run([sys.executable.encode(), b"-m", b"factrl.harness.engine.cli", *argv], cwd=REPO, env=ENV,
                          capture_output=True, timeout=300)


def _one_line(done: subprocess.CompletedProcess) -> str:
    err = done.stderr.decode("utf-8", "replace").strip().splitlines()
    assert done.returncode == 2 and len(err) == 1, done.stderr.decode("utf-8", "replace")[-2000:]
    return err[0]


def test_a_jsonl_with_a_latin1_byte_names_file_line_and_byte(tmp_path):
    source = tmp_path / "wiki.jsonl"
    source.write_bytes(json.dumps({"title": "Paris", "text": "Paris is in France."}).encode() + b"\n"
                       + b'{"title": "Caf\xe9", "text": "A cafe."}\n')
    out = tmp_path / "wiki.sqlite3"
    line = _one_line(_harness("evidence", "build", str(source), "--out", str(out), "--tokenizer", "words"))
    assert line == f"harness evidence: error: {source}:2: not UTF-8 text (byte 14 of the line)."
    left = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock"))
    assert left == ["wiki.jsonl"]  # no store, no temporary file


def test_arguments_that_are_not_utf8_are_one_line_without_the_value(tmp_path):
    line = _one_line(_harness("evidence", "query", "--title", b"Caf\xe9", "--store", str(tmp_path / "x.sqlite3")))
    assert line == "harness evidence: error: command-line argument 3 is not UTF-8 text (byte 3: 0xe9); pass UTF-8 text"
    line = _one_line(_harness("judge", "ask", "atomic_facts", b'{"text": "caf\xe9"}', "judge=none"))
    assert line == "harness judge: error: command-line argument 3 is not UTF-8 text (byte 13: 0xe9); pass UTF-8 text"
    line = _one_line(_harness("judge", "ask", "atomic_facts", '{"text": "caf\\udce9"}', "judge=none"))
    assert line == ("harness judge: error: the item holds a lone surrogate (a \\udXXX escape), not text; pass "
                    "UTF-8 text.")


def test_a_grid_file_that_is_not_utf8_is_one_line(tmp_path):
    grid = tmp_path / "bad.yaml"
    grid.write_bytes(b"name: bad\nmethods: [raw]\n# caf\xe9\n")
    line = _one_line(_harness("grid", str(grid)))
    assert line == f"harness grid: error: grid file {grid}: not UTF-8 text (byte 30)."
