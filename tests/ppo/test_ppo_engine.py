"""The PPO engine on tiny-llama: KL before the first update, the critic learning on a fixed
batch, two real updates (both adapters change, the base does not), and kill + resume."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from factrl.harness.training.critic import ValueHead
from tests.helpers import REPO
from tests.ppo.toy_ppo import ToyPPO, train_toy_ppo

# Large LRs and no warmup (the schedule warms up over ceil(steps x 0.03) steps: a 1-step run would not move).
FAST = ["train.learning_rate=1e-2", "train.ppo.critic_learning_rate=1e-2", "train.warmup_ratio=0"]


def _trainer(tmp_path, overrides=()):
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.args import lora_config
    from factrl.harness.training.ppo import PPOSettings, PPOTrainer
    from factrl.harness.training.args import ppo_args

    cfg = compose(["model=tiny-llama", *FAST, *overrides])
    identity = models.resolve(cfg.model)
    tokenizer = models.load_tokenizer(identity, cfg.model)
    dataset = build_dataset(load_pool(cfg.pool)[:4], cfg.model)
    settings = PPOSettings.from_config(cfg.train)
    trainer = PPOTrainer(model=models.load_model(identity, cfg.model), args=ppo_args(cfg, tmp_path, settings),
                         train_dataset=dataset, processing_class=tokenizer, peft_config=lora_config(cfg.lora),
                         method_reward=ToyPPO(cfg.method).build_reward(None), reward_name="toyppo",
                         ppo=settings, lora_config=lora_config(cfg.lora))
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop, which these tests bypass
    return trainer, dataset


def test_kl_is_zero_before_the_first_update_and_the_value_loss_falls_on_a_fixed_batch(tmp_path):
    trainer, dataset = _trainer(tmp_path)
    batch = trainer._generate_and_score_completions([dataset[0], dataset[0], dataset[1], dataset[1]])
    shape = tuple(batch["completion_ids"].shape)
    for key in ("advantages", "returns", "old_values", "value_mask", "old_per_token_logps"):
        assert tuple(batch[key].shape) == shape, key  # (B, T)
    assert trainer._metrics["train"]["kl"] == [0.0]  # policy LoRA B = 0: policy == reference exactly
    optimizer = trainer.create_optimizer()
    assert [len(g["params"]) for g in optimizer.param_groups][1] == len(trainer.critic.parameters())
    assert [g["lr"] for g in optimizer.param_groups] == [1e-2, 1e-2]
    losses = []
    for _ in range(6):  # PPO epochs over the same rollout
        optimizer.zero_grad()
        trainer.compute_loss(trainer.model, batch).backward()
        trainer.value_step()  # what training_step runs after the policy's backward
        optimizer.step()
        losses.append(trainer._metrics["train"]["value_loss"][-1])
    assert losses[-1] < 0.95 * losses[0], losses  # value clipping (0.2) bounds how far one rollout moves V
    # Below the first loss at every step (Adam at 1e-2 on OpenRLHF's bias-free head may wobble by a few %).
    assert all(b < losses[0] for b in losses[1:]), losses
    # After updates the policy has moved away from the reference: the next rollout pays KL.
    trainer._generate_and_score_completions([dataset[2], dataset[2], dataset[3], dataset[3]])
    assert trainer._metrics["train"]["kl"][-1] > 0


def _critic_state(run):
    return load_file(str(run / "train" / "critic" / "critic.safetensors"))


def test_two_updates_change_both_adapters_and_not_the_base(tmp_path):
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose

    result = train_toy_ppo(tmp_path / "run", [*FAST, "train.ppo.epochs=1", "train.ppo.critic_learning_rate=2e-2"])
    train_dir = tmp_path / "run" / "train"
    policy = load_file(str(result.adapter_dir / "adapter_model.safetensors"))
    lora_b = [v for k, v in policy.items() if "lora_B" in k]
    assert lora_b and all(v.abs().sum() > 0 for v in lora_b), "a policy LoRA B stayed at its zero init"
    assert not any("critic" in k for k in policy), "the critic adapter leaked into the policy adapter"
    critic = _critic_state(tmp_path / "run")
    critic_b = [v for k, v in critic.items() if "lora_B" in k]
    assert critic_b and all(v.abs().sum() > 0 for v in critic_b), "a critic LoRA B stayed at its zero init"
    fresh_head = ValueHead(critic["value_head.linear.weight"].size(1), seed=42).linear.weight
    assert not torch.equal(critic["value_head.linear.weight"], fresh_head), "the value head did not train"
    assert "value_head.linear.bias" not in critic  # OpenRLHF's head has no bias
    # The frozen base: every base weight of the trained model equals a fresh load.
    cfg = compose(["model=tiny-llama"])
    fresh = models.load_model(models.resolve(cfg.model), cfg.model).state_dict()
    trained = {k.replace(".base_layer", ""): v for k, v in result.model.get_base_model().state_dict().items()
               if "lora_" not in k}
    assert set(trained) == set(fresh)
    for key, value in fresh.items():
        assert torch.equal(trained[key], value), key
    logged = [json.loads(x) for x in (train_dir / "log.jsonl").read_text().splitlines()]
    steps = [e for e in logged if "train_runtime" not in e]
    assert [e["step"] for e in steps] == [1, 2]
    assert steps[0]["kl"] == 0.0 and {"value_loss", "value_clipfrac", "grad_norm/critic",
                                      "ppo/returns_mean", "rewards/toyppo/tokens"} <= set(steps[0])
    assert (train_dir / "checkpoint-1" / "critic.safetensors").is_file()
    optim = torch.load(train_dir / "checkpoint-2" / "optimizer.pt", weights_only=False)
    assert [g["initial_lr"] for g in optim["param_groups"]] == [1e-2, 2e-2]  # actor, critic
    timings = json.loads((tmp_path / "run" / "timings.json").read_text())
    assert timings["phases"]["critic"]["seconds"] > 0 and timings["phases"]["reward"]["calls"] == 2


@pytest.mark.slow  # three real runs, two of them in subprocesses (about 40 s on 2 shared cores)
def test_killed_run_resumes_with_equal_critic_weights(tmp_path):
    overrides = [*FAST, "train.ppo.epochs=2", "train.steps=2", "train.save_steps=1"]
    train_toy_ppo(tmp_path / "straight", overrides)
    env = {**os.environ, "HARNESS_KILL_AT_STEP": "2", "PYTHONPATH": str(REPO)}
    script = [sys.executable, "-m", "tests.ppo.toy_ppo", str(tmp_path / "killed"), *overrides]
    killed = subprocess.run(script, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert killed.returncode == 137, killed.stderr[-2000:]
    assert (tmp_path / "killed" / "train" / "checkpoint-2" / "critic.safetensors").is_file()
    assert not (tmp_path / "killed" / "train" / "critic").exists()
    env.pop("HARNESS_KILL_AT_STEP")
    resumed = subprocess.run(script, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    a, b = _critic_state(tmp_path / "straight"), _critic_state(tmp_path / "killed")
    assert a.keys() == b.keys()
    for key in a:
        assert torch.allclose(a[key], b[key], atol=1e-6), key
    first = load_file(str(tmp_path / "killed" / "train" / "checkpoint-2" / "critic.safetensors"))
    assert any(not torch.equal(first[k], b[k]) for k in b), "the resumed run did not train the critic"
    pa = load_file(str(tmp_path / "straight" / "train" / "adapter" / "adapter_model.safetensors"))
    pb = load_file(str(tmp_path / "killed" / "train" / "adapter" / "adapter_model.safetensors"))
    for key in pa:
        assert torch.allclose(pa[key], pb[key], atol=1e-6), key


@pytest.mark.slow  # 4 runs, 3 in subprocesses (about 50 s on 2 shared cores)
def test_kills_during_saves_resume_to_the_uninterrupted_critic_and_policy(tmp_path):
    """kill -9 after TRL's files of checkpoint 1 are written but before its critic, then at the
    first moment of checkpoint 2's save: each rerun resumes from the newest whole checkpoint (an
    in-place save left checkpoint-1/ without critic.safetensors, and the rerun stopped)."""
    from tests.kills import run_until, step_file, step_folder

    overrides = [*FAST, "train.ppo.epochs=1", "train.steps=3", "train.save_steps=1",
                 "train.completions_per_question=2", "train.max_completion_length=8"]
    train_toy_ppo(tmp_path / "straight", overrides)
    run, log = tmp_path / "killed", tmp_path / "attempts.log"
    cmd = [sys.executable, "-m", "tests.ppo.toy_ppo", str(run), *overrides]
    assert run_until(cmd, log, step_file(run / "train", 1, "trainer_state.json")) == -9
    assert run_until(cmd, log, step_folder(run / "train", 2)) == -9
    assert run_until(cmd, log) == 0, log.read_text()[-3000:]
    assert "Traceback" not in log.read_text()
    a, b = _critic_state(tmp_path / "straight"), _critic_state(run)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    pa = load_file(str(tmp_path / "straight" / "train" / "adapter" / "adapter_model.safetensors"))
    pb = load_file(str(run / "train" / "adapter" / "adapter_model.safetensors"))
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    records = [(tmp_path / r / "train" / "reward_records.jsonl").read_text() for r in ("straight", "killed")]
    assert records[0] == records[1]


def test_a_checkpoint_without_its_critic_is_skipped_for_the_previous_one(tmp_path, caplog):
    import logging

    run = tmp_path / "run"
    env = {**os.environ, "HARNESS_KILL_AT_STEP": "2", "PYTHONPATH": str(REPO)}
    overrides = ["train.ppo.epochs=1", "train.steps=3", "train.save_steps=1", "train.completions_per_question=2",
                 "train.max_completion_length=8"]
    script = [sys.executable, "-m", "tests.ppo.toy_ppo", str(run), *overrides]
    assert subprocess.run(script, cwd=REPO, env=env, capture_output=True, timeout=600).returncode == 137
    (run / "train" / "checkpoint-2" / "critic.safetensors").unlink()
    with caplog.at_level(logging.INFO, logger="factrl.harness.training"):
        train_toy_ppo(run, overrides)
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert skipped == ["skipped incomplete checkpoint(s) checkpoint-2 (no critic.safetensors), "
                       "removed; resuming from checkpoint-1"]
    steps = [json.loads(x)["step"] for x in (run / "train" / "log.jsonl").read_text().splitlines()]
    assert steps[:3] == [1, 2, 3]  # step 2 trained again from checkpoint 1


def test_full_critic_is_a_separate_trained_copy(tmp_path):
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose

    result = train_toy_ppo(tmp_path / "run", [*FAST, "train.ppo.epochs=1", "train.steps=1", "train.ppo.critic=full"])
    critic = _critic_state(tmp_path / "run")
    cfg = compose(["model=tiny-llama"])
    fresh = models.load_model(models.resolve(cfg.model), cfg.model).state_dict()
    body = {k: v for k, v in critic.items() if not k.startswith("value_head.")}
    assert body and not any("lora_" in k for k in body)
    changed = [k for k, v in body.items() if not torch.equal(v, fresh[f"model.{k}"])]
    assert changed, "the full critic's weights did not train"
    trained = {k.replace(".base_layer", ""): v for k, v in result.model.get_base_model().state_dict().items()
               if "lora_" not in k}
    assert all(torch.equal(trained[k], v) for k, v in fresh.items()), "the policy's base weights moved"


def test_one_completion_per_question_trains_in_minibatches(tmp_path):
    """FoRAG adjusted (C = 1): no group is needed; 2 minibatches x 2 epochs per rollout."""
    train_toy_ppo(tmp_path / "run", ["train.ppo.epochs=2", "train.questions_per_step=4", "train.steps=1",
                                     "train.completions_per_question=1", "train.ppo.minibatches=2"])
    train_dir = tmp_path / "run" / "train"
    records = [json.loads(x) for x in (train_dir / "reward_records.jsonl").read_text().splitlines()]
    assert len(records) == 4 and len({r["question"] for r in records}) == 4  # one rollout of 4 questions x 1
    logged = [json.loads(x) for x in (train_dir / "log.jsonl").read_text().splitlines()]
    assert [e["step"] for e in logged if "value_loss" in e] == [1, 2, 3, 4]


def test_value_head_is_openrlhfs_head_and_init():
    """OpenRLHF/OpenRLHF@3c3be623 openrlhf/models/model.py:254 `nn.Linear(hidden_size, 1, bias=False)`,
    :172 `value_head.weight.data.normal_(mean=0.0, std=1 / (config.hidden_size + 1))`."""
    for hidden in (3072, 4096):
        head = ValueHead(hidden, seed=7)
        assert head.linear.bias is None and tuple(head.linear.weight.shape) == (1, hidden)
        weight = head.linear.weight.detach().double()
        # The sample std of `hidden` normal draws is within ~3/sqrt(2 hidden) of the true std.
        assert float(weight.std()) == pytest.approx(1 / (hidden + 1), rel=3 / (2 * hidden) ** 0.5)
        assert abs(float(weight.mean())) < 4 / (hidden + 1) / hidden ** 0.5
    assert torch.equal(ValueHead(64, seed=7).linear.weight, ValueHead(64, seed=7).linear.weight)  # seeded
    values = ValueHead(8, seed=1)(torch.zeros(2, 3, 8, dtype=torch.bfloat16))
    assert values.dtype == torch.float32 and torch.equal(values, torch.zeros(2, 3))  # no bias: 0 in, 0 out
