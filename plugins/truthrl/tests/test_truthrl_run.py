"""`harness run method=truthrl` end to end, as a researcher would run it once the plugin is
installed: the entry point is found, two GRPO steps train on the tiny Llama with the reference
judge, and a leaderboard row is recorded with the judge and the settings among its components."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("factrl_truthrl", reason="factrl-truthrl is not installed: run `pip install -e plugins/truthrl` "
                                             "(make setup does)")
from tests.helpers import harness  # noqa: E402
from tests.method_readme import assert_listed  # noqa: E402


def test_harness_methods_lists_the_plugin():
    assert_listed("truthrl", "factrl-truthrl")


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
