"""FoRAG's reward settings (`method.*` in configs/method/forag.yaml), checked once.

FoRAG (Cai et al., KDD 2024) publishes no training code, so every default (configs/method/forag.yaml) is a
harness choice; README.md gives the reason for each (docs/BASELINES.md §4 "Default").
"""
from __future__ import annotations

from dataclasses import dataclass

from factrl.harness.core import completions as comp
from factrl.harness.core.settings import Settings

# mean: a sentence's reward is the mean of its sub-claims' values (docs/BASELINES.md §4 default);
# sum: each sub-claim's value counts on its own (sub-claim granularity).
AGGREGATIONS = ("mean", "sum")
# sentence_end: on the last token of the sentence the sub-claims come from (token granularity);
# spread: the sentence's reward split evenly over its tokens; final_token: one value per
# completion (its sub-claims aggregated) on the completion's last token (sequence granularity).
PLACEMENTS = ("sentence_end", "spread", "final_token")
POSITIVE_CAPS = ("none", "answer")  # guard: guards.py module docstring


@dataclass(frozen=True)
class FoRAGSettings(Settings):
    """`method.*` of method=forag; configs/method/forag.yaml holds every default and its reason."""

    OWNER = "method"
    DEFAULTS = "method/forag.yaml"
    RANGES = {"supported": "any", "unsupported": "any", "alignment_threshold": "[0, 1]", "evidence_k": "[1, inf)",
              "max_rewarded_statements": "[0, inf)"}
    IGNORE = ("name",)

    supported: float       # value of a sub-claim the evidence supports
    unsupported: float     # value of one it does not support
    aggregation: str
    placement: str
    # docs/PROTOCOL.md §1: under this share of in-section tokens aligned, a completion's sentence
    # rewards cannot be placed; it falls back to final_token (counted).
    alignment_threshold: float
    splitter: str
    evidence_k: int | None  # passages per sub-claim; None: evidence.k
    # A pool row without evidence (no title, or none of its titles in the store) gets no signal
    # (docs/BASELINES.md §1.4); require_title=true makes a title-less pool row an error before training.
    require_title: bool
    # Guards (docs/CONTRACTS.md "Guards"; both off = the design as it stands). A guard only ever
    # sets a sub-claim's positive value to 0, so it can never raise a return.
    dedupe_statements: bool  # a sub-claim already stated earlier in the completion earns no positive value
    max_rewarded_statements: int | None  # only the completion's first N sub-claims earn positive value
    positive_cap: str  # none | answer: positive values only when strict accuracy credits the answer (guards.py)

    def __post_init__(self) -> None:
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation={self.aggregation!r}: choose one of {', '.join(AGGREGATIONS)}")
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement={self.placement!r}: choose one of {', '.join(PLACEMENTS)}")
        if not 0.0 <= self.alignment_threshold <= 1.0:
            raise ValueError(f"alignment_threshold={self.alignment_threshold} must lie in [0, 1]")
        if self.splitter not in comp.SPLITTERS:
            raise ValueError(f"splitter={self.splitter!r}: choose one of {', '.join(comp.SPLITTERS)}")
        if self.evidence_k is not None and int(self.evidence_k) < 1:
            raise ValueError(f"evidence_k={self.evidence_k} must be >= 1 (or null for evidence.k)")
        if self.positive_cap not in POSITIVE_CAPS:
            raise ValueError(f"positive_cap={self.positive_cap!r}: choose one of {', '.join(POSITIVE_CAPS)}")
        if self.max_rewarded_statements is not None and int(self.max_rewarded_statements) < 0:
            raise ValueError(f"max_rewarded_statements={self.max_rewarded_statements} must be >= 0 (or null: off)")

    @property
    def guarded(self) -> bool:
        """Whether any guard is on (the row is then not the harness's FoRAG design as it stands)."""
        return bool(self.guards)

    @property
    def guards(self) -> list[str]:
        """The guards that are on, as `key=value` (docs/CONTRACTS.md "Guards"; tables mark them)."""
        cap = [f"positive_cap={self.positive_cap}"] if self.positive_cap != "none" else []
        return comp.statement_guards(self.dedupe_statements, self.max_rewarded_statements) + cap

    def value(self, supported: bool) -> float:
        return self.supported if supported else self.unsupported

    def aggregate(self, values: list[float]) -> float:
        """The reward of a group of verified sub-claims (a sentence, or a whole completion)."""
        total = sum(values)
        return total / len(values) if self.aggregation == "mean" else total


__all__ = ["AGGREGATIONS", "FoRAGSettings", "PLACEMENTS", "POSITIVE_CAPS"]
