"""RLFH's reward constants, options and hedge filter (AlignRM/RLFH@78cd846; docs/BASELINES.md §3.2).

    truth(statement) = w_t * V[verdict] * |I[score]|                    (reward.py:248-249)
    info(sentence)   = w_i * ln(max(eps, sum of I[score] over its statements) + mu)   (:242-245)

V maps the verdict (Correct, Hedged correct, Vague, Hedged wrong, Wrong; no parser ever returns
"Hedged ..."), I the informativeness score 5..1. The release carries three sets; `train_sh` is
the default because it is what the released launch script runs and what the CorVer paper's RLFH
setup follows (its learning rate 5e-7 and KL 0.01 are train.sh's, scripts/train.sh:59-61; the
README example runs 3e-7, README.md:60; CorVer D.3.2):

    set            V (C, HC, Vague, HW, Wrong)      I (5, 4, 3, 2, 1)            w_i  w_t   source
    train_sh       0.3  0.1  -0.8 -0.9 -1.2          1.3  1.2 1.1  1.0 -0.1      1    1     scripts/train.sh:5-8,69-72
    readme         0.45 0.35 -1   -1.5 -1.7          1.25 1.0 0.75 0.1 -0.2      1.2  1     README.md:58-62
    reward_config  1    0.5  -1   -1.5 -2            1.3  1.2 1.1  1.0 -0.1      1    1     source/feedback/reward.py:23-45
"""
from __future__ import annotations

from dataclasses import dataclass

from factrl.harness.core.completions import SPLITTERS, statement_guards
from factrl.harness.core.settings import Settings

from .prompts import DECODINGS, PARSERS


@dataclass(frozen=True)
class Constants:
    name: str
    verdict: dict[str, float]  # V of correct / vague / wrong (the hedged entries are never produced)
    info: dict[int, float]  # I of score 5..1
    w_info: float
    w_truth: float
    eps: float = -0.9  # floor inside the log: ln(-0.9 + 1) = ln 0.1 = -2.303 (reward.py:43-44, train.sh:71-72)
    mu: float = 1.0


CONSTANTS = {
    "train_sh": Constants("train_sh", {"correct": 0.3, "vague": -0.8, "wrong": -1.2},
                          {5: 1.3, 4: 1.2, 3: 1.1, 2: 1.0, 1: -0.1}, w_info=1.0, w_truth=1.0),
    "readme": Constants("readme", {"correct": 0.45, "vague": -1.0, "wrong": -1.7},
                        {5: 1.25, 4: 1.0, 3: 0.75, 2: 0.1, 1: -0.2}, w_info=1.2, w_truth=1.0),
    "reward_config": Constants("reward_config", {"correct": 1.0, "vague": -1.0, "wrong": -2.0},
                               {5: 1.3, 4: 1.2, 3: 1.1, 2: 1.0, 1: -0.1}, w_info=1.0, w_truth=1.0),
}
GRANULARITIES = ("token", "sentence", "paragraph")
FAILURE_RULES = ("no_signal", "released")
ANSWER_GATES = ("none", "strict")  # guard: scoring.py module docstring
POSITIVE_CAPS = ("none", "answer")  # guard: scoring.py module docstring

# RLFH's post_process (reward.py:252-271): an echoed sentence containing one of these
# (case-sensitive) or ending with "?" gets no reward. "does not have any information" is listed
# twice there; once is the same filter.
HEDGE_PHRASES = ("i'm sorry", "don't have any information", "do not have any information",
                 "does not have any information", "doesn't have any information", "may be able to provide more",
                 "have any additional information", "need more context to", "requests for more context",
                 "request for more context", "it is not possible to")


def is_hedge(sentence: str) -> bool:
    """RLFH's filter on one echoed sentence: True = dropped (tests/reference_vectors/rlfh/hedge_filter.json)."""
    return sentence.endswith("?") or any(phrase in sentence for phrase in HEDGE_PHRASES)


@dataclass(frozen=True)
class RLFHSettings(Settings):
    """`method.*` of method=rlfh; configs/method/rlfh.yaml holds every default and documents it."""

    OWNER = "method"
    DEFAULTS = "method/rlfh.yaml"
    RANGES = {"max_secs": "[1, inf)", "max_words_per_sec": "[1, inf)", "tries": "[1, inf)", "echo_min_share": "(0, 1]",
              "max_rewarded_statements": "[0, inf)", "alignment_threshold": "[0, 1]"}
    IGNORE = ("name",)

    constants: str             # train_sh | readme | reward_config (module docstring)
    granularity: str           # token | sentence | paragraph (reward.py:152-239)
    max_secs: int              # sections shown to the verifier (train.sh:74)
    max_words_per_sec: int     # section length in words (train.sh:75)
    gold_material: bool        # the gold sentence is one of the materials (dataset.py:114)
    drop_hedges: bool          # RLFH's post_process on the echoed sentences
    parser: str                # released | strict (verify / assess replies)
    decoding: str              # released (per prompt) | judge (the judge group's)
    tries: int                 # requests per judge item while replies are unreadable (annotate.py:104)
    echo_min_share: float      # an echo must share a run of this share of its characters with the response
    judge_failure: str         # no_signal | released (verify -> Vague, assess -> 1, extract -> no statements)
    dedupe_statements: bool    # guard: a repeated statement earns no positive reward
    max_rewarded_statements: int | None  # guard: only the first N statements earn positive reward
    answer_gate: str           # guard: none | strict (the answer block read by strict accuracy; scoring.py)
    positive_cap: str          # guard: none | answer (positive terms only when strict accuracy credits the answer)
    answer_once: bool          # guard: a credited answer's later statements of it earn no positive term
    alignment_threshold: float  # docs/PROTOCOL.md §1: under it, no signal for the completion
    splitter: str              # docs/PROTOCOL.md §1 sentence splitter (alignment only)

    def __post_init__(self) -> None:
        choices = {"constants": tuple(CONSTANTS), "granularity": GRANULARITIES, "parser": PARSERS,
                   "decoding": DECODINGS, "judge_failure": FAILURE_RULES, "splitter": SPLITTERS,
                   "answer_gate": ANSWER_GATES, "positive_cap": POSITIVE_CAPS}
        for key, allowed in choices.items():
            if getattr(self, key) not in allowed:
                raise ValueError(f"{key}={getattr(self, key)!r}: choose one of {allowed}")
        for key, low in (("max_secs", 1), ("max_words_per_sec", 1), ("tries", 1)):
            if getattr(self, key) < low:
                raise ValueError(f"{key}={getattr(self, key)} must be >= {low}")
        if self.max_rewarded_statements is not None and self.max_rewarded_statements < 0:
            raise ValueError(f"max_rewarded_statements={self.max_rewarded_statements} must be >= 0 (or null: off)")
        if not 0.0 < self.echo_min_share <= 1.0:
            raise ValueError(f"echo_min_share={self.echo_min_share} must lie in (0, 1]")
        if not 0.0 <= self.alignment_threshold <= 1.0:
            raise ValueError(f"alignment_threshold={self.alignment_threshold} must be in [0, 1] (docs/PROTOCOL.md §1: 0.5)")

    @property
    def table(self) -> Constants:
        return CONSTANTS[self.constants]

    @property
    def guarded(self) -> bool:
        return bool(self.guards)

    @property
    def guards(self) -> list[str]:
        """The guards that are on, as `key=value` (docs/CONTRACTS.md "Guards"; tables mark them)."""
        gate = [f"answer_gate={self.answer_gate}"] if self.answer_gate != "none" else []
        cap = [f"positive_cap={self.positive_cap}"] if self.positive_cap != "none" else []
        once = ["answer_once=true"] if self.answer_once else []
        return statement_guards(self.dedupe_statements, self.max_rewarded_statements) + gate + cap + once


__all__ = ["ANSWER_GATES", "POSITIVE_CAPS", "CONSTANTS", "Constants", "FAILURE_RULES", "GRANULARITIES", "HEDGE_PHRASES", "RLFHSettings",
           "is_hedge"]
