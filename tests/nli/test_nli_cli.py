"""`harness nli score`: the real CLI, in a subprocess and in-process on a tiny HHEM."""
from __future__ import annotations

import json

from factrl.harness.engine.cli import main

from ..helpers import harness


def test_cli_standin_subprocess():
    done = harness("nli", "score", "Paris is the capital of France.", "Paris is in France.")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["score"] == 1.0 and out["nli"]["stand_in"] is True


def test_cli_missing_model_is_one_line_exit_2():
    done = harness("nli", "score", "--backend", "hhem", "a", "b")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "huggingface-cli download" in done.stderr


def test_cli_hhem_in_process(hhem_dir, capsys):
    assert main(["nli", "score", "--backend", "hhem", "--model", str(hhem_dir), "Paris is in France.", "Paris"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert 0.0 <= out["score"] <= 1.0 and out["nli"]["backend"] == "hhem"
