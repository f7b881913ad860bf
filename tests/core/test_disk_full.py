"""A full disk during a checkpoint save, on a real tmpfs (a private mount namespace, `unshare
-rm`; skipped where user namespaces are off): `harness run` stops with ONE line naming the file
it could not write, run.json says `failed` and why, and once there is space again the same
command resumes and finishes."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import REPO
from tests.kills import TEST_ENV


def _namespaces() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt && umount /mnt"],
                           capture_output=True)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _namespaces(), reason="needs `unshare -rm` (user and mount namespaces) "
                                                          "to mount a small tmpfs without root")

SCRIPT = textwrap.dedent("""
    set -u
    mount -t tmpfs -o size=48m tmpfs "$MNT"
    "$PY" -m factrl.harness.engine.cli run method=corver model=tiny-llama train.steps=3 train.save_steps=1 \\
        train.completions_per_question=2 train.max_completion_length=8 eval.limit=2 \\
        output_dir="$MNT/runs" leaderboard.store="$OUT/lb.sqlite" >"$OUT/first.out" 2>"$OUT/first.err" &
    pid=$!
    while kill -0 $pid 2>/dev/null; do
        if ls -d "$MNT"/runs/*/train/checkpoint-1 >/dev/null 2>&1; then
            dd if=/dev/zero of="$MNT/fill" bs=64k >/dev/null 2>&1   # until the disk is full
            break
        fi
        sleep 0.05
    done
    wait $pid; echo $? >"$OUT/first.rc"
    cp "$MNT"/runs/*/run.json "$OUT/run.json"
    rm -f "$MNT/fill"
    "$PY" -m factrl.harness.engine.cli run method=corver model=tiny-llama train.steps=3 train.save_steps=1 \\
        train.completions_per_question=2 train.max_completion_length=8 eval.limit=2 \\
        output_dir="$MNT/runs" leaderboard.store="$OUT/lb.sqlite" >"$OUT/second.out" 2>"$OUT/second.err"
    echo $? >"$OUT/second.rc"
    cp "$MNT"/runs/*/run.json "$OUT/run2.json"
""")


@pytest.mark.slow  # two `harness run` processes on tiny-llama (about 40 s on 2 shared cores)
def test_a_full_disk_is_one_line_and_a_failed_run_that_resumes(tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    env = {**os.environ, **TEST_ENV, "PYTHONPATH": str(REPO), "MNT": str(mnt), "OUT": str(tmp_path),
           "PY": sys.executable}
    done = subprocess.run(["unshare", "-rm", "sh", "-c", SCRIPT], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    err = (tmp_path / "first.err").read_text()
    assert (tmp_path / "first.rc").read_text().strip() == "2", err[-3000:]
    # the log lines and progress bars go on as ever; the failure is one line, and no traceback
    errors = [line[line.index("harness run: error:"):] for line in err.splitlines() if "harness run: error:" in line]
    assert "Traceback" not in err and len(errors) == 1 and err.lower().count("error") == 1, err[-3000:]
    assert errors[0].startswith("harness run: error: no space left on device writing ") and str(mnt) in errors[0]
    info = json.loads((tmp_path / "run.json").read_text())
    assert info["status"] == "failed", info
    assert info["error"].startswith("no space left on device writing ") and str(mnt) in info["error"]
    assert (tmp_path / "second.rc").read_text().strip() == "0", (tmp_path / "second.err").read_text()[-3000:]
    assert json.loads((tmp_path / "run2.json").read_text())["status"] == "finished"
