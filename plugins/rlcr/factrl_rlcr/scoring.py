"""RLCR's reward on plain strings: the format, the stated confidence, correctness and the terms.

The release (damanimehul/RLCR@8904bed reward_fns.py) sums five reward functions with the weights
of its config (configs/Qwen-7B/hotpot/RLCR.yaml:43-44: 0.5, 0.5, 0.5, 1e-6, 1e-6):
- format: the whole completion matches the pattern of `format_pattern` (tabc: ...</think>
  <answer>..</answer> <analysis>..</analysis> <confidence>..</confidence>, nothing after) and
  the last confidence block holds a number in [0, 1] (reward_fns.py:28-63);
- accuracy: 0 without the format, else the last answer block against the gold (hotpot: the
  normalised exact match, reward_fns.py:65-86);
- brier: 0 without the format, else 1 - (accuracy - confidence)^2 (reward_fns.py:88-112);
- mean_confidence: the last confidence clipped to [0, 1], 0 when absent or unreadable (not gated
  by the format, reward_fns.py:114-134);
- confidence_one_or_zero: 1 when that clipped value is within 0.01 of 0 or 1 (reward_fns.py:136-159).
The paper writes the reward as R = 1(correct) - (q - 1(correct))^2; for a well-formed
completion the release's sum is 1 + R / 2 plus the 1e-6 terms (paper_equations.json).

The stated confidence (`stated_confidence`, the harness's rule: factrl.harness.core.answers.confidence,
which the evaluator's calibration metrics read too): the text of the last <confidence> block, read
as a finite number in [0, 1]. MISSING (no block, or an empty one) and MALFORMED (not a number, "90%",
"nan", out of [0, 1]) are not values: the reward gives such a completion no signal by default.
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Sequence

from factrl.harness.core.answers.confidence import MALFORMED, MISSING, Stated, stated_confidence

PATTERNS = {  # reward_fns.py:30-37
    "tabc": r".*?</think>\s*<answer>.*?</answer>\s*<analysis>.*?</analysis>\s*<confidence>.*?</confidence>\s*\Z",
    "tac": r".*?</think>\s*<answer>.*?</answer>\s*<confidence>.*?</confidence>\s*\Z",
}
_CONFIDENCE = re.compile(r"<confidence>(.*?)</confidence>", re.DOTALL | re.MULTILINE)  # reward_fns.py:38
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.MULTILINE)  # reward_fns.py:67
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def format_ok(turn: str, pattern: str) -> bool:
    """The release's format reward: the pattern matches and the last confidence is in [0, 1]."""
    if not re.match(PATTERNS[pattern], turn, re.DOTALL | re.MULTILINE):
        return False
    return stated_confidence(turn).value is not None


def last_answer(turn: str) -> str:
    """The last <answer> block's text ("" when none), as reward_fns.py:77-78 reads it."""
    blocks = _ANSWER.findall(turn)
    return blocks[-1] if blocks else ""


def release_normalize(text: str) -> str:
    """reward_fns.py:7-22 (SQuAD's): lower case, punctuation and articles dropped, whitespace collapsed."""
    no_punct = "".join(ch for ch in str(text).lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", no_punct).split())


def exact_match(answer: str, golds: Sequence[str]) -> bool:
    """reward_fns.py:24-25 against any gold (the release's hotpot rows hold one)."""
    normalized = release_normalize(answer)
    return any(normalized == release_normalize(g) for g in golds)


def released_clip(turn: str) -> float:
    """The value mean_confidence_reward and confidence_one_or_zero read: the last block's float
    clipped to [0, 1], 0 when absent or unreadable (reward_fns.py:121-133)."""
    blocks = _CONFIDENCE.findall(turn)
    if not blocks or blocks[-1] == "":
        return 0.0
    try:
        value = float(blocks[-1])
    except ValueError:
        return 0.0
    return max(0.0, min(value, 1.0))


@dataclass(frozen=True)
class Weights:
    format: float = 0.5
    accuracy: float = 0.5
    brier: float = 0.5
    mean_confidence: float = 1e-6
    confidence_extreme: float = 1e-6


@dataclass(frozen=True)
class Terms:
    format: float
    accuracy: float
    brier: float
    mean_confidence: float
    confidence_extreme: float

    def total(self, w: Weights) -> float:
        return (w.format * self.format + w.accuracy * self.accuracy + w.brier * self.brier
                + w.mean_confidence * self.mean_confidence + w.confidence_extreme * self.confidence_extreme)


def terms(turn: str, pattern: str, correct: bool) -> Terms:
    """The release's five terms of one completion; `correct`: the answer's verdict (used only when
    the format holds, as released)."""
    ok = format_ok(turn, pattern)
    accuracy = 1.0 if ok and correct else 0.0
    brier = 1.0 - (accuracy - stated_confidence(turn).value) ** 2 if ok else 0.0
    clipped = released_clip(turn)
    extreme = 1.0 if abs(clipped - 1) < 0.01 or abs(clipped - 0) < 0.01 else 0.0
    # a missing block scores 0 on both (reward_fns.py:124-125,146-147), not the 1 a clipped 0.0 would give
    if not _CONFIDENCE.findall(turn) or _CONFIDENCE.findall(turn)[-1] == "":
        extreme = 0.0
    return Terms(1.0 if ok else 0.0, accuracy, brier, clipped, extreme)


def paper_reward(correct: bool, confidence: float) -> float:
    """The paper's R = 1(correct) - (q - 1(correct))^2."""
    c = 1.0 if correct else 0.0
    return c - (confidence - c) ** 2


__all__ = ["MALFORMED", "MISSING", "PATTERNS", "Stated", "Terms", "Weights", "exact_match", "format_ok",
           "last_answer", "paper_reward", "release_normalize", "released_clip", "stated_confidence", "terms"]
