"""`harness run method=truthrl` end to end, as a researcher would run it once the plugin is
installed: the entry point is found, two GRPO steps train on the tiny Llama with the reference
judge, and a leaderboard row is recorded with the judge and the settings among its components."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("factrl_truthrl", reason="factrl-truthrl is not installed: run `pip install -e plugins/truthrl` "
                                             "(make setup does)")


def harness(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run([sys.executable, "-m", "factrl.harness.cli", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_harness_methods_lists_the_plugin():
    listed = harness("methods")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("truthrl"))
    assert "grpo" in line and "plugin factrl-truthrl" in line


@pytest.mark.slow  # a real `harness run` (train, evaluate, record): about 12 s on 2 idle cores
def test_two_steps_on_tiny_llama_record_a_row(tmp_path: Path):
    store = tmp_path / "lb.sqlite"
    result = harness("run", "method=truthrl", "model=tiny-llama", "eval.limit=2", f"output_dir={tmp_path / 'runs'}",
                     f"leaderboard.store={store}")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    run_dir = next((tmp_path / "runs").glob("*-truthrl-tiny-llama-*"))
    log = [json.loads(line) for line in (run_dir / "train" / "log.jsonl").read_text().splitlines()]
    steps = [entry for entry in log if "rewards/truthrl/wrong_rate" in entry]
    assert len(steps) == 2
    from factrl_truthrl import DIAGNOSTIC_KEYS

    assert {f"rewards/truthrl/{k}" for k in DIAGNOSTIC_KEYS} <= set(steps[0])
    info = json.loads((run_dir / "run.json").read_text())
    components = info["components"]
    assert components["judge"]["backend"] == "reference" and components["judge"]["stand_in"] is True
    assert components["judge"]["paper_model"] == "meta-llama/Llama-3.3-70B-Instruct"
    assert components["settings"]["abstain"] == 0.0 and components["settings"]["verifier"] == "judge"
    assert {d["setting"] for d in components["settings"]["differences"]} >= {"answer_span", "judge_failure"}
    # the release's engine (protocol_defaults): verl's AdamW with weight decay 0.01, per-sequence token mean
    assert components["optimizer"]["weight_decay"] == 0.01 and components["optimizer"]["loss_type"] == "grpo"
    assert "judge" in info["stand_ins"]
    from factrl.leaderboard.store import Store

    rows = Store(store).rows()
    assert len(rows) == 1 and rows[0]["method"]["name"] == "truthrl"
