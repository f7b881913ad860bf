"""Where FoRAG's rewards land among a completion's tokens (pure functions, no services).

For `algorithm: ppo` a method returns the *reward* of every token (docs/CONTRACTS.md, "PPO
engine"): zeros except where a reward is placed. A sub-claim comes from one sentence of the
completion (it was split out of that sentence), so its span is that sentence's token span,
found through the core's alignment `sigma` (harness/core/completions.py: token t belongs to the
sentence its characters overlap most). Placements (settings.PLACEMENTS):

- sentence_end: the sentence's reward (its verified sub-claims aggregated) on the last token
  whose sigma is that sentence;
- spread: the sentence's reward divided evenly over its tokens (same sum, dense);
- final_token: all verified sub-claims of the completion aggregated into one reward on the
  completion's last token (sequence granularity; also the fallback when the alignment is not
  usable).

A sentence with sub-claims but no token of its own (possible only when a tokenizer merges it
into its neighbours) puts its reward on the final token and is counted as unplaced.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from .settings import FoRAGSettings


def sentence_tokens(sigma: Sequence[int | None], index: int) -> list[int]:
    return [t for t, s in enumerate(sigma) if s == index]


def place_rewards(n_tokens: int, sigma: Sequence[int | None] | None, values: Mapping[int, Sequence[float]],
                  settings: FoRAGSettings) -> tuple[list[float], int]:
    """(per-token rewards of length n_tokens, unplaced sentences).

    values: sentence index -> the values (+supported / -unsupported) of its verified
        sub-claims; sentences with no verified sub-claim are absent (no reward for them).
    sigma: the alignment (one entry per token), or None to place everything on the final token.
    """
    rewards = [0.0] * n_tokens
    filled = {i: list(v) for i, v in values.items() if v}
    if n_tokens == 0 or not filled:
        return rewards, 0
    if sigma is None or settings.placement == "final_token":
        rewards[-1] = settings.aggregate([x for i in sorted(filled) for x in filled[i]])
        return rewards, 0
    if len(sigma) != n_tokens:
        raise ValueError(f"sigma has {len(sigma)} entries for {n_tokens} tokens")
    unplaced = 0
    for index in sorted(filled):
        reward = settings.aggregate(filled[index])
        tokens = sentence_tokens(sigma, index)
        if not tokens:
            rewards[-1] += reward
            unplaced += 1
        elif settings.placement == "spread":
            for t in tokens:
                rewards[t] += reward / len(tokens)
        else:
            rewards[tokens[-1]] += reward
    return rewards, unplaced


__all__ = ["place_rewards", "sentence_tokens"]
