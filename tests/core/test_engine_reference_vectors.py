"""The harness's GRPO advantages and loss against the released code's outputs.

Vectors (tests/reference_vectors/, computed by running the upstream code; README.md there):
- trl/grpo_loss_aggregation.json: TRL v0.23.0's `_compute_loss` (KnowRL's pin) per loss_type;
- trl/grpo_advantages.json, knowrl/grpo_advantage_trl023.json: TRL v0.23.0's group advantages;
- fspo/grpo_advantage_flip.json, fspo/policy_loss_kl.json: verl's (FSPO) advantage and loss.

Each test feeds the vector's inputs to the harness's own code path (the trainer's `_compute_loss`
for the composed method's loss_type; `token_advantages` with the composed method's eps, floor and
scaling) and compares with the upstream output.
"""
from __future__ import annotations

import json

import pytest
import torch

from factrl.harness.engine.config import compose
from factrl.harness.training.advantages import advantage_std_floor, token_advantages
from tests.helpers import REPO

VECTORS = REPO / "tests" / "reference_vectors"


def _vectors(name: str) -> dict:
    return json.loads((VECTORS / name).read_text())


def _advantages_for(cfg_train, rewards: list[float], lengths: list[int], group: int) -> torch.Tensor:
    """The harness's advantages for per-completion rewards broadcast to every token (as the
    KnowRL and FSPO rewards reach the engine), with the composed method's settings."""
    returns = [[r] * n for r, n in zip(rewards, lengths)]
    advantages, _ = token_advantages(returns, group, width=max(lengths), eps=float(cfg_train.advantage_epsilon),
                                     std_floor=advantage_std_floor(cfg_train), scale=str(cfg_train.scale_rewards))
    return advantages


# -- advantages ---------------------------------------------------------------------------------

@pytest.mark.parametrize("case", _vectors("knowrl/grpo_advantage_trl023.json")["cases"], ids=lambda c: c["name"])
def test_knowrl_advantages_equal_trl_0_23s(case):
    train = compose(["method=knowrl", "model=qwen3-8b"]).train
    rewards = [sum(values) for values in zip(*case["input"]["rewards_per_func"])]  # KnowRL: no reward weights
    group = case["input"]["num_generations"]
    got = _advantages_for(train, rewards, [3] * len(rewards), group)
    expected = torch.tensor(case["output"]["advantages"]).unsqueeze(1).expand(-1, 3)
    assert torch.allclose(got, expected, rtol=1e-5, atol=1e-6), (got[:, 0].tolist(), case["output"]["advantages"])


def test_the_std_floor_is_what_moves_knowrls_all_wrong_group():
    # The all-wrong group with fact terms [0, .05, .1, .12]: TRL 0.23 gives [-1.25, -0.32, 0.60, 0.97]
    # (the vector); the harness's 0.1 floor option would give [-0.67, -0.17, 0.32, 0.52].
    case = next(c for c in _vectors("knowrl/grpo_advantage_trl023.json")["cases"]
                if c["name"] == "knowrl_all_wrong_fact_terms")
    rewards = [sum(v) for v in zip(*case["input"]["rewards_per_func"])]
    floored = _advantages_for(compose(["method=knowrl", "train.advantage_std_floor=0.1"]).train, rewards, [1] * 4, 4)
    assert floored[:, 0].tolist() == pytest.approx([-0.674, -0.175, 0.325, 0.524], abs=2e-3)
    assert not torch.allclose(floored[:, 0], torch.tensor(case["output"]["advantages"]), atol=0.1)


@pytest.mark.parametrize("case", [c for c in _vectors("trl/grpo_advantages.json")["cases"]
                                  if c["input"]["scale_rewards"] in ("group", "none", False)
                                  and not c["input"].get("reward_weights")], ids=lambda c: c["name"])
def test_group_advantages_equal_trl_0_23s(case):
    scale = "none" if case["input"]["scale_rewards"] in ("none", False) else "group"
    train = compose(["model=tiny-llama", f"train.scale_rewards={scale}"]).train
    rewards = [sum(values) for values in zip(*case["input"]["rewards_per_func"])]
    got = _advantages_for(train, rewards, [2] * len(rewards), case["input"]["num_generations"])
    assert got[:, 0].tolist() == pytest.approx(case["output"]["advantages"], rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("case", _vectors("fspo/grpo_advantage_flip.json")["cases"], ids=lambda c: c["name"])
def test_fspo_group_advantages_equal_verls(case):
    """Before FSPO's sign flip (a method hook): verl's compute_grpo_outcome_advantage, eps 1e-6."""
    inputs = case["input"]
    train = compose(["method=fspo", "model=qwen3-4b"]).train
    # verl groups by uid; the cases keep each uid's responses consecutive.
    uids = inputs["uid"]
    starts = [i for i in range(len(uids)) if i == 0 or uids[i] != uids[i - 1]]
    bounds = list(zip(starts, starts[1:] + [len(uids)]))
    expected = torch.tensor(case["output"]["group_advantage_before_flip"])
    for start, end in bounds:
        rewards, lengths = inputs["scores"][start:end], inputs["response_lengths"][start:end]
        got = _advantages_for(train, rewards, lengths, end - start)
        width = got.size(1)
        want = expected[start:end, :width]
        if end - start == 1:  # verl gives a lone response mean 0, std 1; harness GRPO needs C >= 2
            continue
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (case["name"], got.tolist(), want.tolist())


# -- the loss through the trainer ---------------------------------------------------------------

@pytest.fixture(scope="module")
def loss_trainer(tmp_path_factory):
    """One real TokenGRPOTrainer (tiny-llama); each case swaps the loss settings and the log-probs."""
    from factrl.harness.services import models
    from factrl.harness.pool import load_pool
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.args import grpo_args, lora_config
    from factrl.harness.training.grpo import TokenGRPOTrainer
    from tests.core.toy_training import Toy

    cfg = compose(["model=tiny-llama", "train.beta=0.04", "train.optim=adamw_torch"])
    identity = models.resolve(cfg.model)
    trainer = TokenGRPOTrainer(model=models.load_model(identity, cfg.model),
                               args=grpo_args(cfg, tmp_path_factory.mktemp("loss")),
                               train_dataset=build_dataset(load_pool(cfg.pool)[:2], cfg.model),
                               processing_class=models.load_tokenizer(identity, cfg.model),
                               peft_config=lora_config(cfg.lora), method_reward=Toy(cfg.method).build_reward(None),
                               reward_name="toy")
    trainer.model.train()
    return trainer


def _harness_loss(trainer, train_cfg, shared: dict, case_input: dict) -> float:
    """The trainer's `_compute_loss` with the composed method's loss settings, on stored log-probs.

    The model forward is the one thing replaced: the vectors fix the per-token log-probs, so the
    trainer's log-prob function returns them; everything after (ratio, clip, KL, aggregation) is
    the harness trainer's code with (B, T) advantages, as the engine feeds it.
    """
    from factrl.harness.training.optim import optimizer_args

    logps = torch.tensor(shared["per_token_logps"])
    mask = torch.tensor(shared["completion_mask"], dtype=torch.long)
    advantages = torch.tensor(shared["advantages"])
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(1).expand_as(logps)  # the harness passes (B, T)
    # The composed method's loss settings as grpo_args maps them (building a second GRPOConfig here
    # would reset Accelerate's state under the trainer).
    train = compose(["model=tiny-llama", *train_cfg]).train
    args = optimizer_args(train)
    trainer.loss_type, trainer.beta = args["loss_type"], float(train.beta)
    trainer.args.use_bias_correction_kl = bool(train.kl_bias_correction)  # as grpo_args passes it
    trainer.epsilon_low, trainer.epsilon_high = case_input["epsilon_low"], case_input["epsilon_high"]
    trainer.max_completion_length = case_input.get("max_completion_length", int(train.max_completion_length))
    trainer.current_gradient_accumulation_steps = case_input.get("current_gradient_accumulation_steps", 1)
    trainer.args.steps_per_generation = case_input.get("steps_per_generation", 1)
    trainer.entropy_coef = args["entropy_coef"]
    stored = (logps.clone().requires_grad_(), torch.zeros_like(logps), None)  # logps, entropies, aux loss
    trainer._get_per_token_logps_and_entropies = lambda *a, **k: stored
    batch = len(logps)
    ones = torch.ones(batch, 1, dtype=torch.long)
    inputs = {"prompt_ids": ones, "prompt_mask": ones,
              "completion_ids": torch.ones_like(mask), "completion_mask": mask, "advantages": advantages,
              "old_per_token_logps": torch.tensor(shared["old_per_token_logps"]),
              "ref_per_token_logps": torch.tensor(shared["ref_per_token_logps"]),
              "num_items_in_batch": torch.tensor(float(case_input.get("num_items_in_batch", int(mask.sum()))))}
    return float(trainer._compute_loss(trainer.model, inputs))


LOSS = _vectors("trl/grpo_loss_aggregation.json")


@pytest.mark.parametrize("case", LOSS["cases"], ids=lambda c: c["name"])
def test_each_loss_type_aggregates_as_trl_0_23(loss_trainer, case):
    # epsilon_high 0.28 (unsloth's DAPO setting) is train.epsilon_high; the cases set the clip directly.
    i = case["input"]
    overrides = [f"train.loss_type={i['loss_type']}", f"train.beta={i['beta']}"]
    got = _harness_loss(loss_trainer, overrides, LOSS["shared_input"], i)
    assert got == pytest.approx(case["output"]["trl_0.23.0"]["loss"], rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("method, loss_type", [("knowrl", "dapo"), ("corver", "grpo"), ("fspo", "bnpo"),
                                               ("nover", "bnpo")])
def test_each_methods_composed_loss_is_its_originals(loss_trainer, method, loss_type):
    """The composed method's loss on TRL's stored case of its original's aggregation: KnowRL (TRL 0.23
    default dapo), CorVer (grpo.yaml loss_type grpo). FSPO and NOVER take a token mean over the
    micro-batch (verl masked_mean, NOVER trainer.py:133): TRL's bnpo; the FSPO vector checks it below."""
    case = next(c for c in LOSS["cases"] if c["name"] == f"{loss_type}_beta0.04")
    method_cfg = compose([f"method={method}", "model=tiny-llama"]).train
    assert method_cfg.loss_type == loss_type
    overrides = [f"method={method}", "train.beta=0.04", "train.entropy_coef=0"]
    got = _harness_loss(loss_trainer, overrides, LOSS["shared_input"], case["input"])
    assert got == pytest.approx(case["output"]["trl_0.23.0"]["loss"], rel=1e-6, abs=1e-7)


def test_fspo_policy_loss_is_verls_token_mean(loss_trainer):
    """verl compute_policy_loss (clip 0.2, masked_mean over the micro-batch) on its stored tensors,
    through the trainer with FSPO's composed loss_type and no KL; the KL term differs: verl clamps
    low_var_kl to [-10, 10] (core_algos.py:325-332), TRL's k3 is not clamped (documented)."""
    vector = _vectors("fspo/policy_loss_kl.json")["cases"][0]
    x = vector["input"]
    shared = {"per_token_logps": x["log_prob"], "old_per_token_logps": x["old_log_prob"],
              "ref_per_token_logps": x["ref_log_prob"], "advantages": x["advantages"], "completion_mask": x["eos_mask"]}
    settings = {"epsilon_low": x["cliprange"], "epsilon_high": x["cliprange"]}
    got = _harness_loss(loss_trainer, ["method=fspo", "train.beta=0", "train.entropy_coef=0"], shared, settings)
    assert got == pytest.approx(vector["output"]["pg_loss"], rel=1e-6)
    # The same tensors under the per-sequence `grpo` aggregation give another number.
    other = _harness_loss(loss_trainer, ["method=fspo", "train.beta=0", "train.loss_type=grpo"], shared, settings)
    assert other != pytest.approx(vector["output"]["pg_loss"], rel=1e-3)


@pytest.mark.parametrize("case", [c for c in json.loads((VECTORS / "openrlhf" / "policy_value_loss.json").read_text())[
    "cases"] if c["name"].startswith("PolicyLoss")], ids=lambda c: c["name"])
def test_ppo_policy_loss_is_openrlhfs_policy_loss(loss_trainer, case):
    """OpenRLHF 0.5.9.post1 PolicyLoss (per-sequence masked mean, then the batch mean; RLFH's PPO)
    through the trainer with RLFH's composed loss_type; PPO turns TRL's KL term off (it is in the reward)."""
    from factrl.harness.training.ppo import PPOSettings

    x = case["input"]
    rlfh = compose(["method=rlfh", "model=qwen3-8b"]).train
    assert PPOSettings.from_config(rlfh).cliprange == x["clip_eps"]
    mask = x["action_mask"] or [[1] * len(row) for row in x["log_probs"]]
    shared = {"per_token_logps": x["log_probs"], "old_per_token_logps": x["old_log_probs"],
              "ref_per_token_logps": x["old_log_probs"], "advantages": x["advantages"],
              "completion_mask": [[int(m) for m in row] for row in mask]}
    eps = {"epsilon_low": x["clip_eps"], "epsilon_high": x["clip_eps"]}
    got = _harness_loss(loss_trainer, ["method=rlfh", "train.beta=0"], shared, eps)
    assert got == pytest.approx(case["output"]["loss"], rel=1e-6)
