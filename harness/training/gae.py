"""PPO arithmetic on (B, T) tensors: KL-shaped token rewards, GAE, whitening, the value loss.

Every function here is pure tensor math (no model, no trainer) so the unit tests can check it
against hand computations (docs/BASELINES.md §6):

    r_t     = clip(reward_t, -10, 10) - beta * k3_t,  k3_t = exp(d_t) - d_t - 1
              d_t = ref_t - logp_t (`k3`: OpenRLHF 0.5.9.post1 models/utils.py:7-34, TRL) or
              d_t = logp_t - ref_t (`k3_rlfh`: RLFH's vendored copy, AlignRM/RLFH@78cd846
              source/ppo/ppo_utils.py:53-79, which its experience maker calls)
    delta_t = r_t + gamma * V_{t+1} - V_t             (V = 0 after the last valid token)
    A_t     = sum_l (gamma * lam)^l * delta_{t+l}     (within the completion)
    G_t     = A_t + V_t                               (returns stay raw; A is whitened)
    A      <- (A - mean) * rsqrt(max(var, 1e-8))      (population variance over the rollout's valid
                                                       tokens: OpenRLHF replay_buffer.py:208-237)
    L_V     = 0.5 * mean over completions of the per-completion masked mean of
              max((V - G)^2, (V_old + clip(V - V_old, -c, c) - G)^2)   (OpenRLHF models/loss.py:80-105)

The reference vectors in tests/reference_vectors/openrlhf/ (OpenRLHF 0.5.9.post1, the version RLFH
runs) check each function (tests/ppo/test_openrlhf_vectors.py).
"""
from __future__ import annotations

import torch

from .settings import KL_ESTIMATORS  # noqa: F401 - the estimator names live with the settings

REWARD_CLIP = 10.0  # docs/BASELINES.md §6: method rewards are clipped to [-10, 10] before the KL term


def kl_k3(logps: torch.Tensor, ref_logps: torch.Tensor, estimator: str = "k3") -> torch.Tensor:
    """Per-token k3 KL estimate, (B, T) -> (B, T); >= 0, 0 where equal.

    `k3` estimates KL(policy || reference) (d = ref - logp); `k3_rlfh` is RLFH's vendored copy,
    which does not negate (d = logp - ref) and so estimates the reverse direction."""
    if estimator not in KL_ESTIMATORS:
        raise ValueError(f"KL estimator {estimator!r}: use one of {KL_ESTIMATORS}")
    diff = ref_logps - logps if estimator == "k3" else logps - ref_logps
    return torch.exp(diff) - diff - 1.0


def shaped_rewards(rewards: torch.Tensor, mask: torch.Tensor, kl: torch.Tensor | None, beta: float,
                   clip: float = REWARD_CLIP) -> torch.Tensor:
    """(B, T) method rewards, clipped, minus beta x per-token KL; 0 on padding (mask 0)."""
    shaped = rewards.clamp(-clip, clip)
    if kl is not None and beta:
        shaped = shaped - beta * kl
    return shaped * mask


def gae(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float,
        lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over right-padded completions.

    rewards, values, mask: (B, T); mask is 1 on completion tokens and 0 on padding (padding is
    at the end of each row). Returns (advantages, returns), both (B, T) and 0 on padding.
    The value after a completion's last token is 0 (the episode ends there), so a reward on
    token k reaches the advantages of tokens <= k only.
    """
    mask = mask.to(values.dtype)
    values = values * mask
    rewards = rewards * mask
    width = rewards.size(1)
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(width)):
        next_value = values[:, t + 1] if t + 1 < width else torch.zeros_like(running)
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        # Padding resets the recursion, so nothing flows back across the end of a completion.
        running = (delta + gamma * lam * running) * mask[:, t]
        advantages[:, t] = running
    returns = (advantages + values) * mask
    return advantages, returns


def whiten(values: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """(x - mean) * rsqrt(max(var, eps)) over the entries where mask is 1, population variance
    (OpenRLHF's NaiveReplayBuffer.normalize); 0 elsewhere."""
    mask = mask.to(values.dtype)
    count = mask.sum()
    if count < 1:
        return values * mask
    mean = (values * mask).sum() / count
    var = (((values - mean) * mask) ** 2).sum() / count
    return (values - mean) * torch.rsqrt(var.clamp(min=eps)) * mask


def clipped_value_loss(values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor,
                       mask: torch.Tensor, cliprange_value: float) -> torch.Tensor:
    """0.5 x the mean over completions of each one's masked mean of the larger of the plain and the
    clipped squared error (OpenRLHF ValueLoss); (B, T) -> (). Rows without a valid token ("no
    signal", value mask 0) are left out of the mean."""
    clipped = old_values + (values - old_values).clamp(-cliprange_value, cliprange_value)
    loss = torch.max((values - returns) ** 2, (clipped - returns) ** 2)
    mask = mask.to(values.dtype)
    tokens = mask.sum(dim=-1)
    rows = tokens > 0
    if not bool(rows.any()):
        return (loss * mask).sum()  # 0, with the graph kept
    per_row = (loss * mask).sum(dim=-1)[rows] / tokens[rows]
    return 0.5 * per_row.mean()
