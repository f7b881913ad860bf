"""The PPO engine's arithmetic (harness/training/gae.py, ppo.rollout_targets' settings) against
OpenRLHF 0.5.9.post1 and RLFH's vendored functions, run upstream (tests/reference_vectors/openrlhf/;
README.md there). The policy loss goes through the trainer: tests/core/test_engine_reference_vectors.py."""
from __future__ import annotations

import json

import pytest
import torch

from factrl.harness.engine.config import compose
from factrl.harness.training.gae import clipped_value_loss, gae, kl_k3, shaped_rewards, whiten
from factrl.harness.training.ppo import PPOSettings
from tests.helpers import REPO

VECTORS = REPO / "tests" / "reference_vectors" / "openrlhf"


def _cases(name: str) -> list[dict]:
    return json.loads((VECTORS / f"{name}.json").read_text())["cases"]


def _rows(values) -> list[torch.Tensor]:
    """A padded (B, T) list or a packed list of unequal rows, as (1, T_i) tensors."""
    return [torch.tensor(row, dtype=torch.float32).unsqueeze(0) for row in values]


def _rlfh() -> PPOSettings:
    return PPOSettings.from_config(compose(["method=rlfh", "model=qwen3-8b"]).train)


@pytest.mark.parametrize("case", [c for c in _cases("compute_approx_kl") if c["input"]["use_kl_estimator_k3"]],
                         ids=lambda c: c["name"])
def test_k3_kl_is_openrlhfs_and_rlfh_uses_its_vendored_copy(case):
    i = case["input"]
    logps, base = torch.tensor(i["log_probs"]), torch.tensor(i["log_probs_base"])
    mask = torch.ones_like(logps) if i["action_mask"] is None else torch.tensor(i["action_mask"], dtype=torch.float32)
    # RLFH's composed settings use what its experience maker calls; FoRAG (no code) OpenRLHF's own.
    estimator = _rlfh().kl_estimator if case["name"].startswith("rlfh") else \
        PPOSettings.from_config(compose(["method=forag"]).train).kl_estimator
    got = kl_k3(logps, base, estimator) * mask
    assert torch.allclose(got, torch.tensor(case["output"]["kl"]), rtol=1e-6, atol=1e-7), estimator


@pytest.mark.parametrize("case", [c for c in _cases("compute_reward") if c["name"].startswith("rlfh_vendored")],
                         ids=lambda c: c["name"])
def test_token_rewards_are_clipped_then_charged_the_kl_as_rlfhs_compute_reward(case):
    """RLFH's vendored compute_reward (the one its experience maker calls): per-token clip to
    [-10, 10], then - kl_coef x kl per token. (OpenRLHF's own scalar-at-the-last-token version is
    not what RLFH runs; its cases are not used.)"""
    i = case["input"]
    settings = _rlfh()
    assert (-settings.reward_clip, settings.reward_clip) == tuple(i["reward_clip_range"])
    masks = i.get("action_mask") or [[True] * len(row) for row in i["r"]]
    for r, kl, m, want in zip(_rows(i["r"]), _rows(i["kl"]), masks, case["output"]["reward"]):
        mask = torch.tensor(m, dtype=torch.float32).unsqueeze(0)
        got = shaped_rewards(r, mask, kl, i["kl_coef"], settings.reward_clip)
        assert torch.allclose(got[0], torch.tensor(want), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", _cases("gae"), ids=lambda c: c["name"])
def test_gae_is_openrlhfs(case):
    i = case["input"]
    masks = i["action_mask"] or [[True] * len(row) for row in i["values"]]
    if i["gamma"] == 1.0 and i["lambd"] == 0.95:  # RLFH's train.sh; the engine's defaults must be these
        assert (_rlfh().gamma, _rlfh().lam) == (1.0, 0.95)
    for b, (values, rewards, m) in enumerate(zip(_rows(i["values"]), _rows(i["rewards"]), masks)):
        mask = torch.tensor(m, dtype=torch.float32).unsqueeze(0)
        advantages, returns = gae(rewards, values, mask, i["gamma"], i["lambd"])
        assert torch.allclose(advantages[0], torch.tensor(case["output"]["advantages"][b]), rtol=1e-5, atol=1e-6)
        assert torch.allclose(returns[0], torch.tensor(case["output"]["returns"][b]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", _cases("advantage_whitening"), ids=lambda c: c["name"])
def test_whitening_is_openrlhfs_replay_buffer_normalisation(case):
    i = case["input"]
    rows = i["advantages"]
    masks = i["action_mask"] or [[True] * len(row) for row in rows]
    flat = torch.tensor([a for row in rows for a in row]).unsqueeze(0)  # the whole rollout buffer
    mask = torch.tensor([m for row in masks for m in row], dtype=torch.float32).unsqueeze(0)
    got = whiten(flat, mask)
    want = torch.tensor([a for row in case["output"]["advantages"] for a in row]).unsqueeze(0)
    assert torch.allclose(got * mask, want * mask, rtol=1e-5, atol=1e-6)  # padding: 0 here, unused there


@pytest.mark.parametrize("case", [c for c in _cases("policy_value_loss") if c["name"].startswith("ValueLoss")],
                         ids=lambda c: c["name"])
def test_value_loss_is_openrlhfs_per_sequence_mean(case):
    i = case["input"]
    values, old, returns = (torch.tensor(i[k]) for k in ("values", "old_values", "returns"))
    mask = torch.ones_like(values) if i["action_mask"] is None else torch.tensor(i["action_mask"], dtype=torch.float32)
    if i["action_mask"] is None:  # packed: one row
        values, old, returns, mask = (x.reshape(1, -1) for x in (values, old, returns, mask))
    assert _rlfh().cliprange_value == i["clip_eps"]
    got = clipped_value_loss(values, old, returns, mask, i["clip_eps"])
    assert float(got) == pytest.approx(case["output"]["loss"], rel=1e-6)
