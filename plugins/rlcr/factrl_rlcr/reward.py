"""The RLCR reward callable: correctness plus a Brier term on the stated confidence, one value per
completion on every token of it (the release's weighted sum of five terms, scoring.py).

Per completion (the model's response prefix, e.g. "<think>", put back in front):
1. the stated confidence (scoring.stated_confidence). `missing_confidence: no_signal` (the
   default): a completion whose last <confidence> block is absent, empty or not a number in
   [0, 1] has no signal (None, reason `no_confidence` or `bad_confidence`), never a value;
   `released`: it is scored as the release scores it (its format term fails, so format, accuracy
   and Brier terms are 0 and only the 1e-6 terms remain: never above a well-formed completion's
   0.5, README "Fidelity");
2. correctness of the last answer block: `exact` (the release's hotpot rule: normalised exact
   match, here against any gold), `matcher` (the protocol's matcher) or `strict` (strict accuracy's
   verdict, a guard against hedged, negated, retracted, listed and embedded golds and fragments);
3. the five terms and their weights (`w_format` .. `w_confidence_extreme`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from factrl.harness.core.answers import match_closed_book, strict_correct
from factrl.harness.core.method import RewardOutput
from factrl.harness.core.settings import Settings

from . import scoring
from .warmup import WARMUP_DEFAULTS, FormatWarmupSettings

RLCR_DEFAULTS = {
    "format_pattern": "tabc",     # configs/Qwen-7B/hotpot/RLCR.yaml:20 (tabc: think, answer, analysis, confidence)
    "correctness": "exact",       # reward_fns.py:80-81: hotpot's normalised exact match
    "missing_confidence": "no_signal",  # no_signal | released (the release's format failure: every main term 0)
    # configs/Qwen-7B/hotpot/RLCR.yaml:43-44: format, accuracy, brier, mean_confidence, confidence_one_or_zero
    "w_format": 0.5, "w_accuracy": 0.5, "w_brier": 0.5, "w_mean_confidence": 1.0e-6, "w_confidence_extreme": 1.0e-6,
    # the SFT stage of the paper's SFT+RLCR, a stand-in where model.format_warmup is true (warmup.py)
    "format_warmup": WARMUP_DEFAULTS,
}
CORRECTNESS = ("exact", "matcher", "strict")
MISSING_RULES = ("no_signal", "released")
DIAGNOSTIC_KEYS = ("format_rate", "correct_rate", "stated_rate", "no_confidence_rate", "bad_confidence_rate",
                   "confidence_mean", "brier_mean", "reward_mean")


@dataclass(frozen=True)
class RLCRSettings(Settings):
    """`method.*` of method=rlcr (RLCR_DEFAULTS documents each key)."""

    OWNER = "method"
    DEFAULTS = RLCR_DEFAULTS
    RANGES = {"w_format": "[0, inf)", "w_accuracy": "[0, inf)", "w_brier": "[0, inf)", "w_mean_confidence": "[0, inf)",
              "w_confidence_extreme": "[0, inf)"}
    IGNORE = ("name",)

    format_pattern: str
    correctness: str
    missing_confidence: str
    w_format: float
    w_accuracy: float
    w_brier: float
    w_mean_confidence: float
    w_confidence_extreme: float
    format_warmup: FormatWarmupSettings

    def __post_init__(self) -> None:
        if self.format_pattern not in scoring.PATTERNS:
            raise ValueError(f"format_pattern={self.format_pattern!r}: choose one of {tuple(scoring.PATTERNS)}")
        if self.correctness not in CORRECTNESS:
            raise ValueError(f"correctness={self.correctness!r}: choose one of {CORRECTNESS}")
        if self.missing_confidence not in MISSING_RULES:
            raise ValueError(f"missing_confidence={self.missing_confidence!r}: choose one of {MISSING_RULES} "
                             f"(no_signal: a completion without a readable confidence has no reward)")
        for key in ("w_format", "w_accuracy", "w_brier", "w_mean_confidence", "w_confidence_extreme"):
            if getattr(self, key) < 0:
                raise ValueError(f"{key}={getattr(self, key)} must be >= 0")

    @property
    def weights(self) -> scoring.Weights:
        return scoring.Weights(self.w_format, self.w_accuracy, self.w_brier, self.w_mean_confidence,
                               self.w_confidence_extreme)

    @property
    def guards(self) -> list[str]:
        return ["correctness=strict"] if self.correctness == "strict" else []


def golds_of(row: Mapping[str, Any]) -> list[str]:
    answers = row.get("answers") or []
    return [answers] if isinstance(answers, str) else [str(a) for a in answers if str(a).strip()]


class RLCRReward:
    """reward(*, completions, completion_ids, rows, **kwargs) -> RewardOutput."""

    name = "rlcr"

    def __init__(self, *, settings: RLCRSettings | None = None, prefix: str = ""):
        self.settings = settings if settings is not None else RLCRSettings.from_mapping()
        self.prefix = str(prefix or "")
        self.__name__ = "rlcr"

    def correct(self, turn: str, row: Mapping[str, Any]) -> bool:
        golds = golds_of(row)
        rule = self.settings.correctness
        if rule == "exact":
            return scoring.exact_match(scoring.last_answer(turn), golds)
        if rule == "matcher":
            return match_closed_book(scoring.last_answer(turn).strip(), golds)
        return strict_correct(turn, tuple(golds), question=row.get("question")).correct

    def score(self, index: int, text: str, row: Mapping[str, Any]) -> dict[str, Any]:
        """One completion's record: stated confidence, verdict, terms, total (None: no signal)."""
        turn = self.prefix + (text or "")
        stated = scoring.stated_confidence(turn)
        no_signal = stated.problem if self.settings.missing_confidence == "no_signal" else None
        record: dict[str, Any] = {"completion": index, "row_id": row.get("id"), "answer": scoring.last_answer(turn),
                                  "confidence_text": stated.text, "confidence": stated.value,
                                  "confidence_problem": stated.problem, "no_signal": no_signal}
        if record["no_signal"] is not None:
            return {**record, "format": None, "correct": None, "brier": None, "total": None}
        correct = self.correct(turn, row)
        terms = scoring.terms(turn, self.settings.format_pattern, correct)
        brier = None if stated.value is None or not terms.format else (terms.accuracy - stated.value) ** 2
        return {**record, "format": bool(terms.format), "correct": bool(terms.accuracy), "brier": brier,
                "terms": vars(terms), "total": terms.total(self.settings.weights)}

    def __call__(self, *, completions: Sequence[str], completion_ids: Sequence[Sequence[int]],
                 rows: Sequence[Mapping[str, Any]], **kwargs: Any) -> RewardOutput:
        if not (len(completions) == len(completion_ids) == len(rows)):
            raise ValueError(f"rlcr: {len(completions)} completions, {len(completion_ids)} completion_ids and "
                             f"{len(rows)} rows: give one row per completion")
        records = [self.score(b, text, row) for b, (text, row) in enumerate(zip(completions, rows))]
        returns = [None if r["total"] is None else [r["total"]] * len(ids) for r, ids in zip(records, completion_ids)]
        return RewardOutput(returns, _diagnostics(records), records, no_signal_reasons=[r["no_signal"] for r in records])


def _diagnostics(records: list[dict[str, Any]]) -> dict[str, float]:
    n = max(len(records), 1)
    stated = [r["confidence"] for r in records if r["confidence"] is not None]
    briers = [r["brier"] for r in records if r["brier"] is not None]
    totals = [r["total"] for r in records if r["total"] is not None]
    out = {
        "format_rate": sum(bool(r["format"]) for r in records) / n,
        "correct_rate": sum(bool(r["correct"]) for r in records) / n,
        "stated_rate": len(stated) / n,
        "no_confidence_rate": sum(r["confidence_problem"] == scoring.MISSING for r in records) / n,
        "bad_confidence_rate": sum(r["confidence_problem"] == scoring.MALFORMED for r in records) / n,
        "confidence_mean": sum(stated) / len(stated) if stated else 0.0,
        "brier_mean": sum(briers) / len(briers) if briers else 0.0,
        "reward_mean": sum(totals) / len(totals) if totals else 0.0,
    }
    assert tuple(out) == DIAGNOSTIC_KEYS
    return {k: float(v) for k, v in out.items()}


__all__ = ["CORRECTNESS", "DIAGNOSTIC_KEYS", "MISSING_RULES", "RLCRReward", "RLCRSettings", "RLCR_DEFAULTS", "golds_of"]
