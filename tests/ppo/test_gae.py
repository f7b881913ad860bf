"""PPO arithmetic against hand computations: GAE, whitening, KL shaping, value loss, settings."""
from __future__ import annotations

import pytest
import torch

from factrl.harness.core.errors import ConfigError
from factrl.harness.training.gae import clipped_value_loss, gae, kl_k3, shaped_rewards, whiten
from factrl.harness.training.ppo import PPOSettings, rollout_targets
from factrl.harness.training.args import ppo_args, ppo_geometry


def _hand_gae(r, v, gamma, lam):
    """Textbook GAE for one completion (V = 0 after the last token), written out plainly."""
    n = len(r)
    v_next = v[1:] + [0.0]
    delta = [r[t] + gamma * v_next[t] - v[t] for t in range(n)]
    adv = [sum((gamma * lam) ** l * delta[t + l] for l in range(n - t)) for t in range(n)]
    return adv, [a + b for a, b in zip(adv, v)]


@pytest.mark.parametrize("gamma,lam", [(1.0, 0.95), (0.9, 0.8), (0.5, 1.0)])
def test_gae_equals_hand_computation_with_a_reward_in_the_middle(gamma, lam):
    r = [0.0, 0.0, 2.0, 0.0, -1.0]  # a reward mid-sequence and one on the last token
    v = [0.3, -0.2, 0.5, 0.1, 0.4]
    adv, ret = gae(torch.tensor([r]), torch.tensor([v]), torch.ones(1, 5), gamma, lam)
    want_adv, want_ret = _hand_gae(r, v, gamma, lam)
    assert torch.allclose(adv[0], torch.tensor(want_adv), atol=1e-6)
    assert torch.allclose(ret[0], torch.tensor(want_ret), atol=1e-6)


def test_gae_by_hand_numbers():
    # gamma 1, lam 0.5, V = 0: A_t = sum 0.5^l r_{t+l}; r = [0, 1, 0] -> A = [0.5, 1, 0].
    adv, ret = gae(torch.tensor([[0.0, 1.0, 0.0]]), torch.zeros(1, 3), torch.ones(1, 3), 1.0, 0.5)
    assert adv.tolist() == [[0.5, 1.0, 0.0]] and ret.tolist() == [[0.5, 1.0, 0.0]]
    # gamma 0.5, lam 1, V = [1, 1]: delta = [0 + 0.5 - 1, 2 + 0 - 1] = [-0.5, 1]; A = [-0.5 + 0.5, 1].
    adv, ret = gae(torch.tensor([[0.0, 2.0]]), torch.ones(1, 2), torch.ones(1, 2), 0.5, 1.0)
    assert adv.tolist() == [[0.0, 1.0]] and ret.tolist() == [[1.0, 2.0]]


def test_padding_ends_the_episode():
    # Row 0 has 2 tokens then padding: its last valid token must not bootstrap from padding values.
    r = torch.tensor([[0.0, 1.0, 5.0, 5.0], [0.0, 0.0, 0.0, 1.0]])
    v = torch.tensor([[0.2, 0.4, 9.0, 9.0], [0.1, 0.1, 0.1, 0.1]])
    mask = torch.tensor([[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    adv, ret = gae(r, v, mask, 1.0, 0.95)
    want, want_ret = _hand_gae([0.0, 1.0], [0.2, 0.4], 1.0, 0.95)
    assert torch.allclose(adv[0, :2], torch.tensor(want), atol=1e-6) and adv[0, 2:].abs().sum() == 0
    assert ret[0, 2:].abs().sum() == 0
    assert torch.allclose(adv[1], torch.tensor(_hand_gae([0.0] * 3 + [1.0], [0.1] * 4, 1.0, 0.95)[0]), atol=1e-6)


@pytest.mark.parametrize("k", [0, 3, 6])
def test_a_reward_on_token_k_reaches_tokens_up_to_k_only(k):
    torch.manual_seed(0)
    values, mask = torch.randn(2, 7), torch.ones(2, 7)
    base = torch.zeros(2, 7)
    bumped = base.clone()
    bumped[1, k] = 1.0
    settings = PPOSettings.from_mapping(whiten=False, kl_coef=0.0)
    zeros, valid = torch.zeros(2, 7), torch.ones(2, dtype=torch.bool)
    a = rollout_targets(base, valid, mask, values, zeros, zeros, settings)["advantages"]
    b = rollout_targets(bumped, valid, mask, values, zeros, zeros, settings)["advantages"]
    diff = (b - a)[1]
    assert torch.all(diff[: k + 1] > 0) and torch.all(diff[k + 1:] == 0)
    assert torch.equal(a[0], b[0])  # other completions are untouched


def test_kl_shaping_and_clip():
    logps = torch.tensor([[-1.0, -2.0]])
    assert torch.equal(kl_k3(logps, logps), torch.zeros(1, 2))
    ref = torch.tensor([[-1.5, -2.0]])
    k3 = kl_k3(logps, ref)
    assert k3[0, 0].item() == pytest.approx(torch.exp(torch.tensor(-0.5)).item() + 0.5 - 1.0)
    shaped = shaped_rewards(torch.tensor([[20.0, -3.0]]), torch.tensor([[1.0, 0.0]]), k3, beta=0.1)
    assert shaped[0, 0].item() == pytest.approx(10.0 - 0.1 * k3[0, 0].item()) and shaped[0, 1] == 0


def test_whiten_over_the_masked_entries():
    x = torch.tensor([[1.0, 2.0, 3.0, 100.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    w = whiten(x, mask)
    # Population variance over the valid entries (OpenRLHF): var([1, 2, 3]) = 2/3.
    assert w[0, :3].tolist() == pytest.approx([-1.5 ** 0.5, 0.0, 1.5 ** 0.5], abs=1e-4) and w[0, 3] == 0


def test_clipped_value_loss_by_hand():
    v, old, ret = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 0.0]]), torch.tensor([[2.0, 0.5]])
    # token 0: plain (1-2)^2 = 1, clipped old + 0.2 = 0.2 -> (0.2-2)^2 = 3.24 -> 3.24; token 1: 0.25.
    loss = clipped_value_loss(v, old, ret, torch.ones(1, 2), 0.2)
    assert loss.item() == pytest.approx(0.5 * (3.24 + 0.25) / 2)


def test_no_signal_completions_get_no_advantage_and_no_value_loss():
    mask = torch.ones(2, 3)
    out = rollout_targets(torch.ones(2, 3), torch.tensor([True, False]), mask, torch.zeros(2, 3),
                          torch.zeros(2, 3), torch.zeros(2, 3), PPOSettings.from_mapping(kl_coef=0.01))
    assert out["advantages"][1].abs().sum() == 0 and out["value_mask"][1].sum() == 0
    assert out["advantages"][0].abs().sum() > 0


def test_settings_defaults_and_errors():
    from factrl.harness.engine.config import compose

    cfg = compose(["model=tiny-llama"])
    settings = PPOSettings.from_config(cfg.train)
    assert (settings.gamma, settings.lam, settings.epochs, settings.minibatches, settings.critic) == (
        1.0, 0.95, 4, 1, "lora")
    assert settings.kl_coef == cfg.train.beta
    from omegaconf import OmegaConf

    with pytest.raises(ConfigError, match="train.ppo.gama"):  # e.g. from a hand-built node
        PPOSettings.from_config(OmegaConf.create({"beta": 0.01, "ppo": {"gama": 0.9}}))
    with pytest.raises(ConfigError, match="train.ppo.critic='twin'"):
        PPOSettings.from_config(OmegaConf.create({"beta": 0.01, "ppo": {"critic": "twin"}}))


def test_geometry_counts_rollouts_and_allows_one_completion(tmp_path):
    from factrl.harness.engine.config import compose

    cfg = compose(["model=tiny-llama", "train.questions_per_step=4", "train.completions_per_question=1",
                   "train.ppo.minibatches=2", "train.ppo.epochs=3", "train.steps=5", "train.save_steps=2"])
    settings = PPOSettings.from_config(cfg.train)
    assert ppo_geometry(cfg.train, settings) == {"per_device_train_batch_size": 2, "gradient_accumulation_steps": 1,
                                                 "generation_batch_size": 4, "num_generations": 1}
    args = ppo_args(cfg, tmp_path, settings)
    assert (args.max_steps, args.save_steps, args.num_iterations, args.beta) == (30, 12, 3, 0.0)
    assert args.num_generations == 1 and args.steps_per_generation == 2 and args.epsilon == 0.2
    cfg.train.ppo.minibatches = 3
    with pytest.raises(ConfigError, match="train.ppo.minibatches"):
        ppo_geometry(cfg.train, PPOSettings.from_config(cfg.train))
