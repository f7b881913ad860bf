"""Data-parallel training: two real processes (torchrun, gloo) against one.

The trainer runs for real under `torchrun --nproc_per_node 2`; the batch of per-token returns is
fixed by (step, global position, token) (tests/distributed/dist_grpo.py), so the one-process and
the two-process runs must hand the loss the same advantages, with groups that straddle the two
processes and a no-signal completion among them.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from factrl.harness.core.errors import ConfigError
from factrl.harness.training.advantages import token_advantages
from factrl.harness.training.distributed import check_whole_groups
from factrl.harness.training.args import batch_geometry
from factrl.harness.training.gae import whiten

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _torchrun(module: str, *args: str, processes: int = 2, timeout: int = 300, launcher: str = "torchrun"
              ) -> subprocess.CompletedProcess:
    """Run `python -m module args` in N processes under torchrun or `accelerate launch` (shipped DDP file)."""
    from factrl.harness.engine.run.launcher import accelerate_config_file

    if launcher == "torchrun":
        start = ["torch.distributed.run", "--standalone", "--nproc_per_node", str(processes)]
    else:
        start = ["accelerate.commands.launch", "--config_file", str(accelerate_config_file("ddp")),
                 "--num_processes", str(processes)]
    command = [sys.executable, "-m", *start, "-m", module, *args]
    env = {k: v for k, v in ENV.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return result


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize("launcher", ["torchrun", "accelerate"])
def test_collectives_match_one_process_math(tmp_path, launcher):
    """Gathered advantages, global whitening, averaged gradients, records and the shared value,
    on two gloo processes, against the one-process functions on the whole batch."""
    from tests.distributed.dist_math import global_batch

    _torchrun("tests.distributed.dist_math", str(tmp_path), launcher=launcher)
    ranks = [_load(tmp_path / f"math-rank{r}.json") for r in range(2)]
    returns, values, mask, _ = global_batch()
    expected, stats = token_advantages(returns, 4, width=9, std_floor=0.1)
    got = torch.zeros(12, 9)
    for r, data in enumerate(ranks):
        rows = torch.tensor(data["advantages"])
        got[r * 6:r * 6 + 6, :rows.size(1)] = rows
        assert data["mean_return"] == pytest.approx(stats.mean_return)
    assert torch.allclose(got, expected, atol=1e-6)
    # Groups straddle the processes (rows 4-7 = group 2): local math could not even group them.
    with pytest.raises(ValueError, match="groups of 4"):
        token_advantages(returns[:6], 4)
    whitened = torch.cat([torch.tensor(d["whitened"]) for d in ranks])
    assert torch.allclose(whitened, whiten(values, mask), atol=1e-5)
    assert not torch.allclose(torch.tensor(ranks[0]["whitened"]), whiten(values[:6], mask[:6]), atol=1e-3)
    assert all(d["grad"] == [1.5, 1.5, 1.5] for d in ranks)  # mean of 1 and 2
    assert ranks[0]["records"] == [{"rank": 0, "b": 0}, {"rank": 0, "b": 1}, {"rank": 1, "b": 0},
                                   {"rank": 1, "b": 1}] and ranks[1]["records"] == []
    assert all(d["shared"] == "from rank 0" for d in ranks)


@pytest.mark.slow
def test_two_processes_train_with_the_one_process_advantages(tmp_path):
    """Two GRPO steps of the real engine on tiny-llama: 1 process vs torchrun x 2 (gloo); ~35 s."""
    one, two = tmp_path / "one", tmp_path / "two"
    result = subprocess.run([sys.executable, "-m", "tests.distributed.dist_grpo", str(one)], cwd=REPO,
                            env={k: v for k, v in ENV.items() if k not in ("RANK", "WORLD_SIZE")},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    _torchrun("tests.distributed.dist_grpo", str(two))
    single = _load(one / "advantages-rank0.json")
    ranks = [_load(two / f"advantages-rank{r}.json") for r in range(2)]
    assert single["world_size"] == 1 and all(r["world_size"] == 2 for r in ranks)
    assert len(single["steps"]) == 2 and all(len(r["steps"]) == 2 for r in ranks)
    for step in range(2):
        expected = torch.tensor(single["steps"][step]["advantages"])
        parts = [r["steps"][step] for r in ranks]
        assert [len(p["ids"]) for p in parts] == [6, 6]  # 3 questions x 4: group 2 straddles the ranks
        # The same global batch, in TRL's process order...
        assert parts[0]["ids"] + parts[1]["ids"] == single["steps"][step]["ids"]
        got = torch.cat([torch.tensor(p["advantages"]) for p in parts])
        assert got.shape == expected.shape == (12, 8)
        # ...gets the one-process advantages, exactly (same float operations on the same numbers).
        assert torch.equal(got, expected)
        assert expected.abs().sum() > 0 and expected[5].abs().sum() == 0  # no-signal row: zero
    # Rank 0 alone wrote the run directory: every process's reward records once, one log per step.
    records = [json.loads(x) for x in (two / "run" / "train" / "reward_records.jsonl").read_text().splitlines()]
    assert [r["position"] for r in records] == list(range(12)) * 2
    log = [json.loads(x) for x in (two / "run" / "train" / "log.jsonl").read_text().splitlines()]
    assert [e["step"] for e in log if "reward" in e] == [1, 2]
    assert (two / "run" / "train" / "TRAINING_DONE").is_file()
    assert (two / "run" / "train" / "adapter" / "adapter_model.safetensors").is_file()


def test_batch_geometry_splits_the_global_batch_over_processes():
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"questions_per_step": 3, "completions_per_question": 4})
    assert batch_geometry(cfg, 1) == {"per_device_train_batch_size": 12, "gradient_accumulation_steps": 1,
                                      "generation_batch_size": 12, "num_generations": 4}
    assert batch_geometry(cfg, 2) == {"per_device_train_batch_size": 6, "gradient_accumulation_steps": 1,
                                      "generation_batch_size": 12, "num_generations": 4}
    micro = OmegaConf.create({"questions_per_step": 3, "completions_per_question": 4, "micro_batch_size": 3})
    assert batch_geometry(micro, 2)["gradient_accumulation_steps"] == 2
    with pytest.raises(ConfigError, match="do not split over 5 processes"):
        batch_geometry(cfg, 5)
    with pytest.raises(ConfigError, match="train.micro_batch_size=4 must divide .* 2 processes = 6"):
        batch_geometry(OmegaConf.create({**cfg, "micro_batch_size": 4}), 2)


def test_ppo_geometry_splits_each_minibatch_over_processes():
    from omegaconf import OmegaConf

    from factrl.harness.training.ppo import PPOSettings

    from factrl.harness.training.args import ppo_geometry

    cfg = OmegaConf.create({"questions_per_step": 4, "completions_per_question": 2})
    geometry = ppo_geometry(cfg, PPOSettings.from_mapping(minibatches=2, kl_coef=0.01), processes=2)
    assert geometry["per_device_train_batch_size"] == 2 and geometry["gradient_accumulation_steps"] == 1
    with pytest.raises(ConfigError, match="does not split over 3 processes"):
        ppo_geometry(cfg, PPOSettings.from_mapping(minibatches=2, kl_coef=0.01), processes=3)


def test_whole_groups_methods_refuse_a_split_group():
    class Grouped:
        name, whole_groups = "grouped", True

    check_whole_groups(Grouped(), 16, 4, 2)  # 8 per process: two whole groups
    check_whole_groups(type("Plain", (), {"name": "plain"})(), 12, 4, 2)  # whole_groups False: fine
    with pytest.raises(ConfigError, match=r"train.questions_per_step=3 .* 2 processes .*multiple of 2"):
        check_whole_groups(Grouped(), 12, 4, 2)


@pytest.mark.slow
def test_ppo_replicas_stay_identical_over_two_processes(tmp_path):
    """The PPO engine (LoRA critic) under torchrun x 2: DDP leaves the critic alone, so the trainer
    broadcasts its initial weights and averages its gradients; at every optimizer step both ranks
    hold the same critic and policy and the same (averaged, non-zero) gradients. ~35-50 s."""
    _torchrun("tests.distributed.dist_ppo", str(tmp_path))
    ranks = [_load(tmp_path / f"ppo-rank{r}.json") for r in range(2)]
    assert len(ranks[0]) == len(ranks[1]) == 2  # 2 rollouts x 1 epoch x 1 minibatch
    for a, b in zip(*ranks):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12)
        assert a["critic_grad_abs"] > 0
    assert ranks[0][1]["critic"] != ranks[0][0]["critic"]  # the critic did train
