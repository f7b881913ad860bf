"""FSPO's token arithmetic: the factuality mask m, the sign flip, and the step-reward returns.

Released code (docs/BASELINES.md §2.2), per completion i of T_i tokens:
    m_t = +1 / -1 on the tokens of a reasoning sentence HHEM finds factual / not factual,
          +1 on every other token (tags, answer, EOS);
          0 on every token of a completion that has no step signal (format failure, no
          evidence for its question, alignment below the threshold).
    A_i = group advantage of the answer score (the same for every token of completion i);
    A_t = A_i where m_t * A_i >= 0, else -A_i;  i.e. |A_i| * sign(m_t) for m_t != 0.
So m_t = 0 never flips, A_i = 0 stays 0 (a tied group teaches nothing), and a wrong answer's
answer tokens get +|A_i| (the sign comes from factuality, the magnitude from the outcome).

Paper (Eq. 10), the `step_reward` variant: R(t) = r_i + w * s(sentence of t), s in {-1, 0, +1},
0 outside reasoning sentences; the harness's token-level GRPO turns these returns into token
advantages (docs/PROTOCOL.md §3) in place of the paper's Eq. 11 adjustment, whose coefficients are unverified.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # torch is imported where a tensor is made: loading the method stays light
    import torch


def factuality_mask(sigma: Sequence[int | None], sentence_signs: dict[int, int]) -> list[int]:
    """m for one completion with a step signal: sentence_signs[s] (+1 / -1) on the tokens of
    each scored sentence s, +1 on every other token (the released code's default)."""
    return [sentence_signs.get(s, 1) if s is not None else 1 for s in sigma]


def pad_masks(masks: Sequence[Sequence[int] | None], width: int) -> "torch.Tensor":
    """(B, T) float tensor of the per-completion masks, right-padded with 0 (None: all 0)."""
    import torch

    out = torch.zeros(len(masks), width, dtype=torch.float32)
    for b, mask in enumerate(masks):
        if mask:
            n = min(len(mask), width)
            out[b, :n] = torch.tensor(list(mask[:n]), dtype=torch.float32)
    return out


def flip_advantages(advantages: "torch.Tensor", masks: "torch.Tensor") -> "torch.Tensor":
    """A_t = A where m_t * A >= 0, else -A; shapes (B, T) in and out (docs/BASELINES.md §2.2).

    Equivalently |A| * sign(m_t) wherever m_t != 0, and A unchanged wherever m_t = 0.
    """
    import torch

    if advantages.shape != masks.shape:
        raise ValueError(f"advantages {tuple(advantages.shape)} and masks {tuple(masks.shape)} must both be (B, T)")
    masks = masks.to(advantages.device, advantages.dtype)
    return torch.where(masks * advantages >= 0, advantages, -advantages)


def step_returns(sigma: Sequence[int | None], answer_score: float, sentence_steps: dict[int, int] | None,
                 weight: float) -> list[float]:
    """Per-token returns of the step-reward variant: r + w * s(sentence of t), r elsewhere."""
    if not sentence_steps:
        return [float(answer_score)] * len(sigma)
    return [float(answer_score) + (weight * sentence_steps.get(s, 0) if s is not None else 0.0) for s in sigma]


__all__ = ["factuality_mask", "flip_advantages", "pad_masks", "step_returns"]
