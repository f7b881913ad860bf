"""RLFH's reward constants and options (BASELINES 3.2; AlignRM/RLFH @78cd846).

    truth(statement) = w_t * V[verdict] * |I[score]|
    info(sentence)   = w_i * ln(max(eps, sum of I[score] over its statements) + mu)

V maps the verdict (Correct, Hedged correct, Vague, Hedged wrong, Wrong; our judge never says
"hedged", as RLFH's parser never did), I maps the informativeness score 5..1. The public code
carries three sets of constants; `readme` is the default because it belongs to the only fully
documented run (the repository README's), and CorVer names no other:

    set            V (C, HC, Vague, HW, Wrong)      I (5, 4, 3, 2, 1)            w_i  w_t
    readme         0.45 0.35 -1   -1.5 -1.7          1.25 1.0 0.75 0.1 -0.2      1.2  1
    train_sh       0.3  0.1  -0.8 -0.9 -1.2          1.3  1.2 1.1  1.0 -0.1      1    1
    reward_config  1    0.5  -1   -1.5 -2            1.3  1.2 1.1  1.0 -0.1      1    1
"""
from __future__ import annotations

from dataclasses import dataclass

from factrl.harness.completions import SPLITTERS
from factrl.harness.settings import Settings

VERDICTS = ("correct", "vague", "wrong")  # what the verify prompt accepts (BASELINES 3.1)


@dataclass(frozen=True)
class Constants:
    name: str
    verdict: dict[str, float]  # V of correct / vague / wrong (the hedged entries are never produced)
    info: dict[int, float]  # I of score 5..1
    w_info: float
    w_truth: float
    eps: float = -0.9  # floor inside the log: ln(-0.9 + 1) = ln 0.1 = -2.303
    mu: float = 1.0


CONSTANTS = {
    "readme": Constants("readme", {"correct": 0.45, "vague": -1.0, "wrong": -1.7},
                        {5: 1.25, 4: 1.0, 3: 0.75, 2: 0.1, 1: -0.2}, w_info=1.2, w_truth=1.0),
    "train_sh": Constants("train_sh", {"correct": 0.3, "vague": -0.8, "wrong": -1.2},
                          {5: 1.3, 4: 1.2, 3: 1.1, 2: 1.0, 1: -0.1}, w_info=1.0, w_truth=1.0),
    "reward_config": Constants("reward_config", {"correct": 1.0, "vague": -1.0, "wrong": -2.0},
                               {5: 1.3, 4: 1.2, 3: 1.1, 2: 1.0, 1: -0.1}, w_info=1.0, w_truth=1.0),
}
GRANULARITIES = ("token", "sentence")

# Refusal / hedge sentences are dropped before extraction (BASELINES 3.1 step 4), matched
# case-insensitively (the public filter is case-sensitive: BASELINES 9). Our list, after the
# two phrases the sources show ("i'm sorry", "need more context to").
HEDGE_PHRASES = ("i'm sorry", "i am sorry", "i apologize", "need more context", "more context to",
                 "i don't know", "i do not know", "i'm not sure", "i am not sure", "as an ai")


@dataclass(frozen=True)
class RLFHSettings(Settings):
    """`method.*` of method=rlfh; configs/method/rlfh.yaml holds every default and documents it."""

    OWNER = "method"
    DEFAULTS = "method/rlfh.yaml"
    IGNORE = ("name",)

    constants: str             # readme | train_sh | reward_config (module docstring)
    granularity: str           # token: truth on the statement's LCS end | sentence: both at the sentence end
    evidence_k: int            # passages per statement
    gold_material: bool        # add `The correct answer for "<question>" is "<answer>".` (RLFH's data builder)
    drop_hedges: bool          # drop refusal / hedge sentences and questions before extraction
    alignment_threshold: float  # PROTOCOL 1: under it, no signal for the completion
    splitter: str              # PROTOCOL 1 sentence splitter

    def __post_init__(self) -> None:
        if self.constants not in CONSTANTS:
            raise ValueError(f"constants={self.constants!r}: choose one of {tuple(CONSTANTS)}")
        if self.granularity not in GRANULARITIES:
            raise ValueError(f"granularity={self.granularity!r}: choose one of {GRANULARITIES}")
        if self.splitter not in SPLITTERS:
            raise ValueError(f"splitter={self.splitter!r}: choose one of {SPLITTERS}")
        if self.evidence_k < 1:
            raise ValueError(f"evidence_k={self.evidence_k} must be >= 1 (RLFH: 3)")
        if not 0.0 <= self.alignment_threshold <= 1.0:
            raise ValueError(f"alignment_threshold={self.alignment_threshold} must be in [0, 1] (PROTOCOL 1: 0.5)")

    @property
    def table(self) -> Constants:
        return CONSTANTS[self.constants]


def is_hedge(sentence: str) -> bool:
    """A refusal / hedge sentence or a question (case-insensitive; curly apostrophes too)."""
    text = sentence.strip().casefold().replace("\u2019", "'")
    return text.endswith("?") or any(phrase in text for phrase in HEDGE_PHRASES)


__all__ = ["CONSTANTS", "Constants", "GRANULARITIES", "HEDGE_PHRASES", "RLFHSettings", "VERDICTS", "is_hedge"]
