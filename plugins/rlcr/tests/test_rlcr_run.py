"""`harness run method=rlcr` end to end: the entry point is found, two GRPO steps train on the tiny
Llama with RLCR's prompt addition (its prompt budget raised to hold it) and a leaderboard row is
recorded, marked as a method prompt. The tiny Llama's random weights never write a confidence block,
so every completion is "no signal: no_confidence", counted as the engine counts them (a completion
that follows the requested format earns a real reward: test_rlcr_prompt.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("factrl_rlcr", reason="factrl-rlcr is not installed: run `pip install -e plugins/rlcr` "
                                          "(make setup does)")
from tests.helpers import harness  # noqa: E402
from tests.method_readme import assert_listed  # noqa: E402


def test_harness_methods_lists_the_plugin():
    assert_listed("rlcr", "factrl-rlcr")


@pytest.mark.slow  # a real `harness run` (train, evaluate, record): about 12 s on 2 idle cores
def test_two_steps_on_tiny_llama_record_a_row(tmp_path: Path):
    lb = tmp_path / "lb.sqlite"
    result = harness("run", "method=rlcr", "model=tiny-llama", "eval.limit=2", "train.max_prompt_length=320",
                     f"output_dir={tmp_path / 'runs'}", f"leaderboard.store={lb}")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    run_dir = next((tmp_path / "runs").glob("*-rlcr-tiny-llama-*"))
    log = [json.loads(line) for line in (run_dir / "train" / "log.jsonl").read_text().splitlines()]
    steps = [entry for entry in log if "rewards/rlcr/stated_rate" in entry]
    assert len(steps) == 2
    from factrl_rlcr import DIAGNOSTIC_KEYS

    assert {f"rewards/rlcr/{k}" for k in DIAGNOSTIC_KEYS} <= set(steps[0])
    assert all(entry["rewards/rlcr/no_signal"] == 1.0 for entry in steps)
    assert all(entry["rewards/rlcr/no_signal/no_confidence"] + entry.get("rewards/rlcr/no_signal/bad_confidence", 0)
               + entry.get("rewards/rlcr/no_signal/empty_completion", 0) == pytest.approx(1.0) for entry in steps)
    components = json.loads((run_dir / "run.json").read_text())["components"]
    from factrl_rlcr.prompt import PROMPT_ADDITION

    assert components["prompt"]["text"] == PROMPT_ADDITION and components["prompt"]["stand_in"] is False
    assert components["settings"]["missing_confidence"] == "no_signal"
    assert components["optimizer"]["lr_scheduler"] == "constant_with_warmup"
    assert components["advantages"]["scale_rewards"] == "none"
    from factrl.leaderboard.store import Store

    rows = Store(lb).rows()
    assert len(rows) == 1 and rows[0]["method"]["name"] == "rlcr"
    assert rows[0]["generation"]["method_prompt"]["method"] == "rlcr"  # the tables mark it (leaderboard/marks.py)
