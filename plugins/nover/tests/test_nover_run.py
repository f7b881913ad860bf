"""`harness run method=nover` end to end, as a researcher would run it once the plugin is installed:
the entry point is found, two GRPO steps train on the tiny Llama with the proxy saved beside each
checkpoint, and a leaderboard row is recorded with the proxy among its components."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("factrl_nover", reason="factrl-nover is not installed: run `pip install -e plugins/nover` "
                                           "(make setup does)")


def harness(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run([sys.executable, "-m", "factrl.harness.engine.cli", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_harness_methods_lists_the_plugin():
    listed = harness("methods")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("nover"))
    assert "grpo" in line and "plugin factrl-nover" in line


@pytest.mark.slow  # 11 s on the idle 2-core machine, 30 s loaded (a real `harness run`: train, evaluate, record)
def test_two_steps_on_tiny_llama_record_a_row(tmp_path: Path):
    store = tmp_path / "lb.sqlite"
    result = harness("run", "method=nover", "model=tiny-llama", "train.steps=2", f"output_dir={tmp_path / 'runs'}",
                     f"leaderboard.store={store}", "method.length_rule=paper")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    run_dir = next((tmp_path / "runs").glob("*-nover-tiny-llama-*"))
    train = run_dir / "train"
    assert (train / "adapter" / "adapter_config.json").is_file()
    assert not (train / "adapter" / "nover_proxy").exists()  # the evaluated adapter is the policy's alone
    for step in (1, 2):
        assert (train / f"checkpoint-{step}" / "policy_adapters" / "nover_proxy" / "adapter.safetensors").is_file()
    logged = (train / "log.jsonl").read_text()
    assert "rewards/nover/format_rate" in logged
    components = json.loads((run_dir / "run.json").read_text())["components"]
    assert components["proxy"]["backend"] == "policy-adapter" and components["proxy"]["stand_in"] is False
    assert components["settings"]["length_rule"] == "paper" and components["settings"]["kl_reference"] == "proxy"
    # The public engine (protocol_defaults): clip 0.1 / 0.2 (config.py:66-67), std scaling, token mean.
    assert (components["optimizer"]["epsilon_low"], components["optimizer"]["epsilon_high"]) == (0.1, 0.2)
    assert components["advantages"]["scale_rewards"] == "group" and components["optimizer"]["loss_type"] == "bnpo"
    from factrl.leaderboard.store import Store

    rows = Store(store).rows()
    assert len(rows) == 1 and rows[0]["method"]["name"] == "nover"
    assert rows[0]["components"]["proxy"]["label"].startswith("policy proxy")


@pytest.mark.slow  # 3 `harness run` processes, 2 killed mid-save (about 45 s on 2 shared cores)
def test_kills_during_saves_resume_with_the_proxy_restored(tmp_path: Path):
    """kill -9 after TRL's files of checkpoint 1 but before the proxy, then at the first moment of
    checkpoint 2's save: the third attempt resumes from checkpoint 1 with its proxy (an in-place
    save left a checkpoint-1/ without the proxy, resumed with a fresh one and no warning, and an
    empty checkpoint-2/ that blocked every rerun)."""
    from tests.kills import run_until, step_file, step_folder

    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "factrl.harness.engine.cli", "run", "method=nover", "model=tiny-llama", "train.steps=3",
           "train.save_steps=1", "train.completions_per_question=2", "train.max_completion_length=8",
           "eval.limit=2", "leaderboard=rundir", f"leaderboard.store={tmp_path / 'lb.sqlite'}", f"output_dir={runs}"]
    log = tmp_path / "attempts.log"

    def train() -> Path:
        found = list(runs.glob("*-nover-tiny-llama-*"))
        return found[0] / "train" if found else runs / "none"

    assert run_until(cmd, log, lambda: step_file(train(), 1, "trainer_state.json")()) == -9
    assert run_until(cmd, log, lambda: step_folder(train(), 2)()) == -9
    run_dir = train().parent
    assert "copies []" not in (run_dir / "run.log").read_text()  # never a fresh proxy in place of step 1's
    assert run_until(cmd, log) == 0, log.read_text()[-3000:]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "finished"
    text = (run_dir / "run.log").read_text()
    assert "Traceback" not in log.read_text()
    assert "restored policy adapter copies ['nover_proxy'] from " in text and "copies []" not in text
    assert text.count("resuming from") == 1 and "checkpoint-1" in text.split("resuming from")[1].splitlines()[0]
