"""`harness run --help` answers fast: its command line (harness/engine/run/cli.py) reaches neither torch
nor TRL, and it lists the main keys, not only the groups."""
from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from factrl.harness.engine.cli import main
status = main(["run", "--help"])
heavy = sorted(m for m in ("torch", "trl", "transformers", "hydra") if m in sys.modules)
print("HEAVY", heavy, status)
"""


def test_run_help_lists_the_keys_without_importing_torch():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "train.steps=" in done.stdout and "eval.limit=" in done.stdout and "output_dir=" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "HEAVY [] 0"


KEY_SCRIPT = """
import sys
from factrl.harness.engine.cli import main
for argv in (["run", "--help", "claim.stale_s"], ["run", "--help", "corpus.min_interval_s"],
             ["run", "--help", "method.threshold", "method=fspo"]):
    print("STATUS", main(argv))
print("STATUS", main(["run", "--help", "claim.stale"]))
heavy = sorted(m for m in ("torch", "trl", "transformers") if m in sys.modules)
print("HEAVY", heavy)
"""


def test_run_help_of_one_key_prints_its_type_range_default_and_help():
    """`harness run --help KEY`: from the key's settings class (type, range) and the YAML that holds
    its default and documents it; a mistyped key is the one-line unknown-key error."""
    done = subprocess.run([sys.executable, "-c", KEY_SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[:2] == ["claim.stale_s: float; allowed (0, inf); default 900 (configs/config.yaml)",
                         "  a claim not refreshed for this long belongs to a dead holder and is taken over"]
    assert lines[3:5] == ["corpus.min_interval_s: float | None; allowed [0, inf); default 2.0 "
                          "(configs/corpus/remote.yaml, corpus=remote)",
                          "  at least this long between requests (the reference client's value)"]
    assert lines[6].startswith("method.threshold: float; allowed [0, 1]; default 0.5 (configs/method/fspo.yaml)")
    assert [line for line in lines if line.startswith("STATUS")] == ["STATUS 0"] * 3 + ["STATUS 2"]
    assert done.stderr.strip() == ("harness run: error: claim.stale: unknown key (did you mean claim.stale_s?); "
                                   "valid: heartbeat_s, stale_s, pending_stale_s")
    assert lines[-1] == "HEAVY []"
