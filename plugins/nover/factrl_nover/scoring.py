"""NOVER's reward arithmetic on plain numbers: format check, length rule, ranks, efficiency.

No model here: the reward (reward.py) computes each completion's reasoning perplexity with the
policy and hands the numbers of one group to these functions. Semantics are the released
code's (thinkwee/NOVER@cb1a4ef), with the harness's strict format (docs/BASELINES.md §8):
- strict format: the completion is exactly one think block then one answer block;
- P = exp(mean NLL / max(1, 1 + log10 N_r)) (rule `released`; `paper`: natural log);
- ranks among a group's valid completions, P ascending, R_r = (n - k) / n for rank k = 0..n-1:
  ties `released` (default): a stable sort, so tied completions get distinct ranks in their
  order (reward_functions.py:312-322); `shared`: k = how many have a strictly lower P;
- efficiency R_e: the fraction of the other valid completions it beats on both strictly
  shorter reasoning and strictly lower P; a lone valid completion gets R_r 1, R_e 0;
- R = w_f R_f + 1[R_f = 1] (w_r R_r + w_e R_e).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

LENGTH_RULES = ("released", "paper")
TIES = ("released", "shared")
_STRICT = re.compile(r"\s*<think>(?P<reasoning>.*?)</think>\s*<answer>(?P<answer>.*?)</answer>\s*", re.DOTALL)
_TAGS = ("<think>", "</think>", "<answer>", "</answer>")


@dataclass(frozen=True)
class Parsed:
    """A well-formed completion: its reasoning and answer text, and where `</think>` ends."""

    reasoning: str
    answer: str
    think_end: int  # index just past `</think>` in the text that was parsed


def parse_strict(text: str) -> Parsed | None:
    """The reasoning and answer of `text` if it is exactly <think>..</think><answer>..</answer>
    (whitespace around the blocks ignored, each tag exactly once), else None."""
    if any(text.count(tag) != 1 for tag in _TAGS):
        return None
    match = _STRICT.fullmatch(text)
    if match is None:
        return None
    return Parsed(match.group("reasoning"), match.group("answer"), match.end("reasoning") + len("</think>"))


def length_scale(reasoning_tokens: int, rule: str = "released") -> float:
    """The divisor of the mean NLL: max(1, 1 + log10 N_r) (released code) or max(1, 1 + ln N_r)."""
    if rule not in LENGTH_RULES:
        raise ValueError(f"length_rule={rule!r}: choose one of {LENGTH_RULES}")
    if reasoning_tokens <= 0:
        return 1.0
    log = math.log10 if rule == "released" else math.log
    return max(1.0, 1.0 + log(reasoning_tokens))


def reasoning_perplexity(mean_nll: float, reasoning_tokens: int, rule: str = "released") -> float:
    """P = exp(mean NLL of the reference tokens / length_scale(N_r))."""
    return math.exp(mean_nll / length_scale(reasoning_tokens, rule))


def rank_rewards(perplexities: Sequence[float], ties: str = "released") -> list[float]:
    """R_r = (n - k) / n for rank k by P ascending. ties `released`: Python's stable sort gives
    tied completions distinct ranks in input order; `shared`: k = how many have a strictly lower P."""
    if ties not in TIES:
        raise ValueError(f"rank_ties={ties!r}: choose one of {TIES}")
    n = len(perplexities)
    if ties == "shared":
        return [(n - sum(q < p for q in perplexities)) / n for p in perplexities]
    out = [0.0] * n
    for k, i in enumerate(sorted(range(n), key=lambda j: perplexities[j])):
        out[i] = (n - k) / n
    return out


def efficiency_rewards(perplexities: Sequence[float], lengths: Sequence[int]) -> list[float]:
    """R_e = share of the other completions with strictly longer reasoning and strictly higher P."""
    n = len(perplexities)
    if len(lengths) != n:
        raise ValueError(f"{len(lengths)} reasoning lengths for {n} perplexities")
    if n < 2:
        return [0.0] * n
    return [sum(lengths[i] < lengths[j] and perplexities[i] < perplexities[j] for j in range(n) if j != i) / (n - 1)
            for i in range(n)]


@dataclass(frozen=True)
class Weights:
    format: float = 1.0
    reasoning: float = 1.0
    efficiency: float = 1.0


@dataclass(frozen=True)
class GroupScores:
    """Per completion of one group: format (0/1), R_r, R_e and the total R."""

    format: list[float]
    reasoning: list[float]
    efficiency: list[float]
    total: list[float]


def score_group(valid: Sequence[bool], perplexities: Sequence[float | None], lengths: Sequence[int | None],
                weights: Weights = Weights(), ties: str = "released") -> GroupScores:
    """NOVER's reward for one group; perplexities and lengths are read only where valid."""
    idx = [i for i, ok in enumerate(valid) if ok]
    n = len(valid)
    r_r, r_e = [0.0] * n, [0.0] * n
    if idx:
        ranks = rank_rewards([float(perplexities[i]) for i in idx], ties)
        eff = efficiency_rewards([float(perplexities[i]) for i in idx], [int(lengths[i]) for i in idx])
        for pos, i in enumerate(idx):
            r_r[i], r_e[i] = ranks[pos], eff[pos]
    fmt = [1.0 if ok else 0.0 for ok in valid]
    total = [weights.format * f + (weights.reasoning * a + weights.efficiency * b if f else 0.0)
             for f, a, b in zip(fmt, r_r, r_e)]
    return GroupScores(fmt, r_r, r_e, total)
