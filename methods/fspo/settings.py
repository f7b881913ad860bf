"""FSPO's reward settings (`method.*` in configs/method/fspo.yaml), checked once.

Defaults are the released code's (nusnlp/FSPO @7f5e4f9, BASELINES 2.2) except where the
harness's shared protocol replaces them (answer score from the harness matcher, PROTOCOL 1
sentences, evidence from the pool's `title`, BASELINES 1.4).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from difflib import get_close_matches
from typing import Any, Mapping

from factrl.harness import completions as comp

VARIANTS = ("sign_flip", "step_reward")
QUERIES = ("question", "none")
# Keys of `method.*` that are not reward settings (read elsewhere or by Hydra).
OTHER_KEYS = ("name", "nli")


@dataclass(frozen=True)
class FSPOSettings:
    # sign_flip: the released code (token advantages |A_i| * sign(m_t)); step_reward: the
    # paper's Eq. 10 (a -1/0/+1 step reward added to the answer reward per token).
    variant: str = "sign_flip"
    # "factual iff score > 0.5 (strict)" (released code, PROTOCOL 4: threshold 0.5).
    threshold: float = 0.5
    # Released code: a format failure scores -2 (its answer score is logged, never added).
    format_penalty: float = -2.0
    # step_reward only: R(t) = answer + step_weight * s(t) (the paper gives no coefficient).
    step_weight: float = 1.0
    # step_reward only: [lo, hi]: s = +1 above hi, -1 below lo, 0 between (a 3-way reading of a
    # binary scorer); None: s = +1 if score > threshold else -1 (HHEM has no neutral class).
    neutral_band: tuple[float, float] | None = None
    # PROTOCOL 1: under this share of in-section tokens aligned, the completion gets mask 0.
    alignment_threshold: float = 0.5
    splitter: str = "reference"
    # Passages per question (None: evidence.k, 5) and the BM25 query that ranks the article's
    # passages: the question text, or none (document order, lead passages first).
    evidence_k: int | None = None
    evidence_query: str = "question"

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant={self.variant!r}: choose one of {', '.join(VARIANTS)}")
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

    @classmethod
    def from_mapping(cls, cfg: Mapping[str, Any] | None) -> "FSPOSettings":
        """Settings from `method.*`; an unknown key is an error with the closest valid name."""
        raw = dict(cfg or {})
        names = [f.name for f in fields(cls)]
        out: dict[str, Any] = {}
        for key, value in raw.items():
            if key in OTHER_KEYS:
                continue
            if key not in names:
                hint = get_close_matches(key, names, n=1)
                raise ValueError(f"{key} is not an FSPO setting" + (f" (did you mean {hint[0]}?)" if hint else "")
                                 + f"; valid: {', '.join(names)}")
            out[key] = value
        for key in ("threshold", "format_penalty", "step_weight", "alignment_threshold"):
            if key in out:
                out[key] = float(out[key])
        for key in ("variant", "splitter", "evidence_query"):
            if key in out:
                out[key] = str(out[key])
        if out.get("evidence_k") is not None:
            out["evidence_k"] = int(out["evidence_k"])
        if out.get("neutral_band") is not None:
            out["neutral_band"] = tuple(out["neutral_band"])
        return cls(**out)

    def step(self, score: float) -> int:
        """The -1 / 0 / +1 value of one sentence's NLI score (0 only inside a neutral band)."""
        if self.neutral_band is None:
            return 1 if score > self.threshold else -1
        lo, hi = self.neutral_band
        return 1 if score > hi else (-1 if score < lo else 0)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["neutral_band"] = list(self.neutral_band) if self.neutral_band is not None else None
        return out


__all__ = ["FSPOSettings", "QUERIES", "VARIANTS"]
