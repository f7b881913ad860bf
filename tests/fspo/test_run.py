"""`harness run method=fspo` end to end on tiny-llama (two steps, offline, the embedded NLI
stand-in and the demo evidence store): it trains, logs every documented metric key, records
its components as stand-ins, and adds a leaderboard row."""
from __future__ import annotations

import json

import pytest

from tests.fspo.test_readme import ENGINE_KEYS, documented_keys
from tests.helpers import harness


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("fspo_run")
    result = harness("run", "method=fspo", "model=tiny-llama", f"output_dir={root / 'runs'}",
                     f"leaderboard.store={root / 'lb.sqlite'}")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return next((root / "runs").glob("*-fspo-tiny-llama-*")), result


@pytest.mark.slow  # shares one real training run (about 30 s on 2 shared cores)
def test_fspo_trains_two_steps_and_logs_the_documented_keys(run):
    path, _ = run
    assert (path / "train" / "adapter" / "adapter_config.json").is_file()
    log = [json.loads(line) for line in (path / "train" / "log.jsonl").read_text().splitlines()]
    assert max(entry["step"] for entry in log) == 2
    keys = set().union(*log)
    assert {f"rewards/fspo/{k}" for k in documented_keys() | ENGINE_KEYS} <= keys
    timings = json.loads((path / "timings.json").read_text())
    assert timings["phases"]["reward"]["calls"] == 2  # one reward call per generation batch


@pytest.mark.slow  # shares one real training run (about 30 s on 2 shared cores)
def test_fspo_run_uses_the_protocol_settings(run):
    import yaml

    path, _ = run
    cfg = yaml.safe_load((path / "config.yaml").read_text())
    assert cfg["train"]["learning_rate"] == 2e-6 and cfg["train"]["beta"] == 0.04
    assert cfg["train"]["temperature"] == 0.7 and cfg["method"]["variant"] == "sign_flip"


@pytest.mark.slow  # shares one real training run (about 30 s on 2 shared cores)
def test_fspo_run_records_stand_ins_and_a_leaderboard_row(run):
    path, _ = run
    info = json.loads((path / "run.json").read_text())
    assert info["status"] == "finished" and info["stand_ins"] == ["evidence", "nli"]
    components = info["components"]
    assert components["nli"]["backend"] == "standin" and components["nli"]["note"]
    assert components["evidence"]["manifest_hash"] and components["evidence"]["stand_in"] is True
    settings = components["settings"]
    assert settings["variant"] == "sign_flip" and settings["threshold"] == 0.5 and settings["G"] == 2
    # verl's engine (configs/protocol/method/fspo.yaml): torch AdamW, token-mean loss, eps 1e-6.
    optimizer, advantages = components["optimizer"], components["advantages"]
    assert (optimizer["optim_used"], optimizer["loss_type"], optimizer["entropy_coef"]) == ("adamw_torch", "bnpo", 0.001)
    assert advantages["advantage_epsilon"] == 1e-6 and settings["advantage_epsilon"] == 1e-6
    assert json.loads((path / "metrics.json").read_text())["stand_ins"] == ["evidence", "nli"]
    assert info["leaderboard"]["status"] == "recorded" and info["leaderboard"]["rows"]


def test_harness_methods_lists_fspo():
    result = harness("methods")
    line = next(line for line in result.stdout.splitlines() if line.startswith("fspo "))
    assert " grpo " in line and "in-tree" in line
