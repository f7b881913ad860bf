"""FSPO's reward settings (`method.*` in configs/method/fspo.yaml), checked once.

The defaults (configs/method/fspo.yaml) are the released code's (nusnlp/FSPO @7f5e4f9,
docs/BASELINES.md §2.2) except where the harness's shared protocol replaces them (answer score from
the harness matcher, docs/PROTOCOL.md §1 sentences, evidence from the pool's `title`, docs/BASELINES.md §1.4).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from factrl.harness.core import completions as comp
from factrl.harness.core.rewards import CORRECTNESS_RULES
from factrl.harness.core.settings import Settings

VARIANTS = ("sign_flip", "step_reward")
QUERIES = ("question", "none")


@dataclass(frozen=True)
class FSPOSettings(Settings):
    """`method.*` of method=fspo; configs/method/fspo.yaml holds every default and its source."""

    OWNER = "method"
    DEFAULTS = "method/fspo.yaml"
    RANGES = {"threshold": "[0, 1]", "format_penalty": "any", "step_weight": "any", "alignment_threshold": "[0, 1]",
              "evidence_k": "[1, inf)", "neutral_band": "[0, 1]"}
    IGNORE = ("name",)

    # sign_flip: the released code (token advantages |A_i| * sign(m_t)); step_reward: the
    # paper's Eq. 10 (a -1/0/+1 step reward added to the answer reward per token).
    variant: str
    threshold: float  # "factual iff score > threshold (strict)"
    # The answer score's rule (harness/core/rewards.py CORRECTNESS_RULES): protocol = the harness
    # matcher (default); strict = strict accuracy v2 (the guard, docs/CONTRACTS.md "Guards").
    correctness: str
    # The score of a format failure: 0 as released (total_score = answer_score, which is 0 then;
    # hotpot.py:267's -2 is only logged). Any other value is a format-shaping signal of our own.
    format_penalty: float
    step_weight: float  # step_reward only: R(t) = answer + step_weight * s(t)
    # step_reward only: [lo, hi]: s = +1 above hi, -1 below lo, 0 between (a 3-way reading of a
    # binary scorer); None: s = +1 if score > threshold else -1 (HHEM has no neutral class).
    neutral_band: tuple[float, ...] | None
    alignment_threshold: float  # under this share of in-section tokens aligned: mask 0
    splitter: str
    # Passages per question (None: evidence.k) and the BM25 query that ranks the article's
    # passages: the question text, or none (document order, lead passages first).
    evidence_k: int | None
    evidence_query: str
    nli: dict[str, Any]  # the NLI scorer's options (factrl.harness.services.nli.load_nli checks them)

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant={self.variant!r}: choose one of {', '.join(VARIANTS)}")
        if self.correctness not in CORRECTNESS_RULES:
            raise ValueError(f"correctness={self.correctness!r}: choose one of {', '.join(CORRECTNESS_RULES)}")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold={self.threshold} must lie in [0, 1] (a probability; paper: 0.5)")
        if not 0.0 <= self.alignment_threshold <= 1.0:
            raise ValueError(f"alignment_threshold={self.alignment_threshold} must lie in [0, 1]")
        if self.splitter not in comp.SPLITTERS:
            raise ValueError(f"splitter={self.splitter!r}: choose one of {', '.join(comp.SPLITTERS)}")
        if self.evidence_query not in QUERIES:
            raise ValueError(f"evidence_query={self.evidence_query!r}: choose one of {', '.join(QUERIES)}")
        if self.evidence_k is not None and int(self.evidence_k) < 1:
            raise ValueError(f"evidence_k={self.evidence_k} must be >= 1 (or null for evidence.k)")
        if self.neutral_band is not None:
            band = tuple(float(x) for x in self.neutral_band)
            if len(band) != 2 or not 0.0 <= band[0] <= band[1] <= 1.0:
                raise ValueError(f"neutral_band={list(self.neutral_band)}: give [lo, hi] with 0 <= lo <= hi <= 1, "
                                 f"or null")
            if self.variant != "step_reward":
                raise ValueError("neutral_band applies only to variant=step_reward; remove it or set "
                                 "variant=step_reward")
            object.__setattr__(self, "neutral_band", band)

    def step(self, score: float) -> int:
        """The -1 / 0 / +1 value of one sentence's NLI score (0 only inside a neutral band)."""
        if self.neutral_band is None:
            return 1 if score > self.threshold else -1
        lo, hi = self.neutral_band
        return 1 if score > hi else (-1 if score < lo else 0)


__all__ = ["FSPOSettings", "QUERIES", "VARIANTS"]
