"""Token-level group-relative advantages (docs/PROTOCOL.md §3).

For the G completions of one question, with per-token returns R(g, t):
    R_bar_g = mean_t R(g, t)                       (per-completion mean return)
    mu, s   = mean and std of R_bar over the group
    A(g, t) = (R(g, t) - mu) / (s + eps)

This is what TRL and every released code compute ((r - mean) / (std + eps), no floor), and it
is the default (`train.advantage_std_floor: 0`). eps is `train.advantage_epsilon` (TRL and the
CorVer, KnowRL and NOVER releases 1e-4; FSPO's verl 1e-6, set in its protocol file).

`train.advantage_std_floor` is a named option that is not in any original: the denominator
becomes max(s, floor) + eps. It guards the one case where the formula misbehaves: when every
completion of a group has nearly the same mean return, s is ~0 and the token-level offsets
(R(g, t) - mu), which per-token returns make non-zero, are divided by ~eps and reach 1e3
(docs/PROTOCOL.md §3 calls this a defect; the released numbers were produced with it). A floor of 0.1
leaves every group with one correctness or format difference untouched (s >= 0.5) but also
rescales groups whose rewards differ only a little (KnowRL's fact term), so a run that uses it
records it in train/components.json as a stand-in (`advantages_component`) and tables mark it.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class AdvantageStats:
    mean_return: float  # mean of R_bar over the batch
    frac_zero_std: float  # share of groups whose std is ~0 (or under the floor)
    max_abs_advantage: float


def pad_returns(token_returns: list[list[float]], width: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T) float returns and (B, T) mask from ragged per-completion lists (right padding)."""
    width = max([len(r) for r in token_returns] + [0]) if width is None else width
    values = torch.zeros(len(token_returns), width, dtype=torch.float32)
    mask = torch.zeros(len(token_returns), width, dtype=torch.float32)
    for b, row in enumerate(token_returns):
        n = min(len(row), width)
        if n:
            values[b, :n] = torch.tensor(row[:n], dtype=torch.float32)
            mask[b, :n] = 1.0
    return values, mask


def token_advantages(
    token_returns: list[list[float] | None], group_size: int, *, width: int | None = None,
    eps: float = 1e-4, std_floor: float = 0.0, scale: str = "group",
) -> tuple[torch.Tensor, AdvantageStats]:
    """Advantages of shape (B, T) for B = n_groups * group_size completions in group order.

    token_returns: B ragged lists (completion b's per-token returns, length T_b), or None
        for "no signal": such a completion is left out of its group's mean and std and
        gets a zero advantage (it neither pushes nor pulls the policy).
    width: T of the output (the trainer's padded completion length); padding gets 0.
    scale: "group" divides by the group std (protocol), "none" only centres.
    """
    if group_size < 1 or len(token_returns) % group_size:
        raise ValueError(f"{len(token_returns)} completions do not split into groups of {group_size}")
    valid = torch.tensor([r is not None for r in token_returns], dtype=torch.bool)
    values, mask = pad_returns([r or [] for r in token_returns], width)
    lengths = mask.sum(dim=1)
    # The per-completion mean in float64, so a completion whose returns are all one value has
    # exactly that mean, as the released trainers' scalar scores do (k float32 copies sum exactly
    # in float64; in float32 the mean of six 0.3s is off by an ulp, which a tied group's std of 0
    # turns into advantages of ulp / eps, 0.03 at eps 1e-6, instead of 0). The group statistics
    # stay float32, as TRL and verl compute them.
    means = ((values.double() * mask.double()).sum(dim=1) / lengths.double().clamp(min=1)).float()
    means = torch.where(valid, means, torch.full_like(means, float("nan")))
    grouped = means.view(-1, group_size)
    counts = (~torch.isnan(grouped)).sum(dim=1, keepdim=True)
    mu = torch.nan_to_num(torch.nanmean(grouped, dim=1, keepdim=True), nan=0.0)
    # TRL (and the released code built on it) uses the unbiased (n-1) std; so do we.
    squares = torch.nan_to_num((grouped - mu) ** 2, nan=0.0).sum(dim=1, keepdim=True)
    std = torch.sqrt(squares / (counts - 1).clamp(min=1))
    mu_b = mu.expand(-1, group_size).reshape(-1, 1)
    std_b = std.expand(-1, group_size).reshape(-1, 1)
    centred = (values - mu_b) * mask * valid.unsqueeze(1)
    if scale == "group":
        denom = torch.clamp(std_b, min=std_floor) + eps
        safe = torch.where(denom > 0, denom, torch.ones_like(denom))
        advantages = torch.where(denom > 0, centred / safe, torch.zeros_like(centred))
    elif scale == "none":
        advantages = centred
    else:
        raise ValueError(f"scale must be 'group' or 'none', not {scale!r}")
    stats = AdvantageStats(
        mean_return=float(torch.nanmean(means)) if bool(valid.any()) else 0.0,
        # "Zero" includes floating-point noise and anything the floor replaces.
        frac_zero_std=float((std < max(std_floor, 1e-6)).float().mean()) if len(std) else 0.0,
        max_abs_advantage=float(advantages.abs().max()) if advantages.numel() else 0.0,
    )
    return advantages, stats


def advantage_std_floor(train_cfg) -> float:
    """`train.advantage_std_floor` (null = 0, the originals' behaviour), checked to be >= 0."""
    from ..core.errors import ConfigError

    floor = float(train_cfg.advantage_std_floor)  # the composed train node (TrainSettings checked it)
    if floor < 0:
        raise ConfigError(f"train.advantage_std_floor={floor}: give 0 (no floor, as the released codes) or a "
                          f"positive floor on the group std")
    return floor


def advantages_component(train_cfg) -> dict:
    """train/components.json's `advantages` entry; a stand-in when the floor (not in any original) is on."""
    floor = advantage_std_floor(train_cfg)
    scale, eps = str(train_cfg.scale_rewards), float(train_cfg.advantage_epsilon)
    entry = {"kind": "advantages", "backend": "harness", "model": None, "revision": None, "stand_in": floor > 0,
             "label": f"group advantages, std floor {floor:g}" if floor > 0 else "group advantages",
             "scale_rewards": scale, "advantage_std_floor": floor, "advantage_epsilon": eps}
    if floor > 0:
        entry["note"] = (f"(r - mean) / (max(std, {floor:g}) + {eps:g}): the std floor is a harness option; the "
                         f"released codes divide by std + eps with no floor")
    return entry
