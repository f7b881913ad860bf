"""`harness run --help` answers fast: its command line (harness/run/cli.py) reaches neither torch
nor TRL, and it lists the main keys, not only the groups."""
from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from factrl.harness.cli import main
status = main(["run", "--help"])
heavy = sorted(m for m in ("torch", "trl", "transformers", "hydra") if m in sys.modules)
print("HEAVY", heavy, status)
"""


def test_run_help_lists_the_keys_without_importing_torch():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "train.steps=" in done.stdout and "eval.limit=" in done.stdout and "output_dir=" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "HEAVY [] 0"
