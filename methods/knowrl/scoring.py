"""KnowRL's reward arithmetic, free of services (zjunlp/KnowRL@f75b0bb, the HEAD CorVer describes).

Total = format + final, in [-2, 3]:

- format (train/reward_function/format_reward.py:15-27): `<think>` is prepended when the
  completion does not start with it; then it must be one think block and one answer block
  (whitespace around the tags allowed, at most one newline after `</answer>`), both non-empty
  after their first non-space character and with no `<think>` / `<answer>` after it -> +1, else -1.
- final, from the judge's SimpleQA grade of the answer: A (correct) -> +2, C (not
  attempted, i.e. a refusal) -> +1, B (incorrect) -> -1. A missing or empty answer is -1
  without a judge call.
- every -1 that is not a refusal becomes -1 + fact, where
  fact = (supported facts / n) x (1 if n > gamma else exp(1 - gamma / n)), 0 when n = 0
  (FActScore's length penalty, gamma 10). A fact is supported when its NLI entailment
  probability reaches the threshold (0.3) on any of its top-k passages.

Variant `v1.0.0` (the paper-era tag): NOT_ATTEMPTED and refusals score -1 too; an answer that
shares no content word with the gold (and the gold has no digit) is -1 without a call; and
fact = min(supported / 15, 1) is added to every -1.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from factrl.harness.core.answers import STOPWORDS, is_refusal, normalize_answer
from factrl.harness.core.settings import Settings

VARIANTS = ("head", "v1.0.0")
RETRIEVALS = ("bm25",)
GRADE_PARSES = ("strict", "released")
# answer_guard (a named guard, docs/CONTRACTS.md "Guards"; off = KnowRL's reward): strict grades
# INCORRECT, without a judge call, an answer strict accuracy v2 withdraws for a gaming reason.
# Not no_match / no_answer: the LLM judge may accept a paraphrase the matcher misses.
ANSWER_GUARDS = ("none", "strict")
# grade_check (a named guard; off = KnowRL's reward): matcher - the judge's CORRECT stands only
# where the protocol's matcher credits the answer too (against the row's golds); where they
# disagree the answer is INCORRECT, so a judge that obeys text in the answer cannot grade a wrong
# answer correct. It gives up the judge's credit for a paraphrase the matcher misses.
GRADE_CHECKS = ("none", "matcher")
GRADES = ("A", "B", "C")  # SimpleQA: correct, incorrect, not attempted
_GRADE_NAMES = {"A": "A", "CORRECT": "A", "B": "B", "INCORRECT": "B", "C": "C", "NOT_ATTEMPTED": "C",
                "NOT ATTEMPTED": "C"}
# The release's `$` (no MULTILINE) also matches before one final newline: "\n?" at the end.
_FORMAT = re.compile(r"<think>(?P<think>.*?)</think>\s*<answer>(?P<answer>.*?)</answer>\n?", re.DOTALL)


@dataclass(frozen=True)
class KnowRLSettings(Settings):
    """`method.*` of method=knowrl: reward values and the fact rule; configs/method/knowrl.yaml
    holds every default (KnowRL HEAD; docs/BASELINES.md §5.1) and its source."""

    OWNER = "method"
    DEFAULTS = "method/knowrl.yaml"
    RANGES = {"correct": "any", "refusal": "any", "incorrect": "any", "format_ok": "any", "format_bad": "any",
              "threshold": "[0, 1]", "gamma": "[0, inf)", "v1_cap": "(0, inf)"}
    IGNORE = ("name",)

    variant: str          # head (CorVer's description) | v1.0.0 (paper-era tag)
    grade_parse: str      # strict (a reply that is only a grade) | released (the release's word search)
    correct: float        # SimpleQA A
    refusal: float        # SimpleQA C (HEAD); v1.0.0 scores it `incorrect`
    incorrect: float      # SimpleQA B, or a missing / empty answer
    format_ok: float
    format_bad: float
    threshold: float      # NLI entailment probability for "supported"
    gamma: float          # FActScore length penalty: exp(1 - gamma / n) for n <= gamma
    v1_cap: float         # v1.0.0: fact = min(supported / v1_cap, 1)
    require_title: bool   # a pool row without `title` is an error before training
    answer_guard: str     # none (KnowRL) | strict: gaming answers (strict accuracy) graded incorrect, no judge call
    grade_check: str      # none (KnowRL) | matcher: the judge's CORRECT only where the protocol's matcher agrees
    retrieval: str        # how passages are ranked per fact (bm25 only: no GTR weights offline)
    nli: dict[str, Any]   # the NLI model's options (factrl.harness.services.nli.load_nli checks them)

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant={self.variant!r}: choose one of {VARIANTS}")
        if self.grade_parse not in GRADE_PARSES:
            raise ValueError(f"grade_parse={self.grade_parse!r}: choose one of {GRADE_PARSES}")
        if self.grade_check not in GRADE_CHECKS:
            raise ValueError(f"grade_check={self.grade_check!r}: choose one of {GRADE_CHECKS} (none: KnowRL's reward)")
        if self.answer_guard not in ANSWER_GUARDS:
            raise ValueError(f"answer_guard={self.answer_guard!r}: choose one of {ANSWER_GUARDS} (none: KnowRL's reward)")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold={self.threshold}: an entailment probability in [0, 1] (KnowRL: 0.3)")
        if self.gamma < 0:
            raise ValueError(f"gamma={self.gamma} must be >= 0 (0 switches the length penalty off; KnowRL: 10)")
        if self.v1_cap <= 0:
            raise ValueError(f"v1_cap={self.v1_cap} must be > 0 (v1.0.0: 15)")
        if self.retrieval not in RETRIEVALS:
            raise ValueError(f"retrieval={self.retrieval!r}: only bm25 is available (GTR weights are not "
                             f"shipped); set method.retrieval=bm25")


@functools.lru_cache(maxsize=1)
def head_settings() -> KnowRLSettings:
    """The YAML's settings: what the scoring functions use when none are passed."""
    return KnowRLSettings.from_mapping()


def _part_ok(part: str) -> bool:
    """A block's text as the release's regex takes it: a non-space character first, then no
    `<think>` / `<answer>` (its look-ahead starts after that first character)."""
    body = part.lstrip()
    return bool(body.strip()) and "<think>" not in body[1:] and "<answer>" not in body[1:]


def format_ok(completion: str) -> bool:
    """KnowRL's format rule: one think block then one answer block, both non-empty, not nested."""
    text = completion or ""
    if not text.startswith("<think>"):
        text = "<think>" + text
    match = _FORMAT.fullmatch(text)
    return match is not None and _part_ok(match["think"]) and _part_ok(match["answer"])


def _first_span(text: str, opener: str, closer: str) -> str | None:
    """The text between the first `opener` and the first `closer` after it, as the release's
    `re.search(opener + "(.*?)" + closer, text, re.DOTALL)` finds it (case-sensitive: `<ANSWER>`
    is no tag); None when there is none."""
    start = text.find(opener)
    end = text.find(closer, start + len(opener)) if start >= 0 else -1
    return text[start + len(opener):end] if end >= 0 else None


def answer_of(completion: str) -> str:
    """The answer the judge grades: the FIRST `<answer>...</answer>` block, stripped
    (correct_reward.py:129,144); "" when there is none (then -1 without a judge call): an
    unclosed block counts as missing, and a nested `<answer>` stays inside the text, as released."""
    span = _first_span(completion or "", "<answer>", "</answer>")
    return span.strip() if span is not None else ""


def reasoning_of(completion: str, prefix: str = "") -> str:
    """The text whose atomic facts are checked (fact_reward.py:89-94): the first
    `<think>...</think>` span, stripped, else the whole completion, stripped. `prefix` is the
    model's response prefix (`model.response_prefix`, e.g. "<think>"): the part of the assistant
    turn the prompt already wrote, so the rule sees the whole turn as the release's did."""
    text = prefix + (completion or "")
    span = _first_span(text, "<think>", "</think>")
    return (span if span is not None else text).strip()


def parse_grade(value: Any) -> str | None:
    """A, B or C from a judge value ("A", "CORRECT", ...); None when it is none of them."""
    if value is None:
        return None
    return _GRADE_NAMES.get(str(value).strip().upper())


def grade_reward(grade: str, settings: KnowRLSettings | None = None) -> float:
    """The correctness value of a SimpleQA grade (A +2, B -1, C +1; v1.0.0: C -1)."""
    settings = settings or head_settings()
    letter = parse_grade(grade)
    if letter is None:
        raise ValueError(f"grade {grade!r} is not one of {GRADES}")
    if letter == "A":
        return settings.correct
    if letter == "C" and settings.variant == "head":
        return settings.refusal
    return settings.incorrect


def length_penalty(n: int, gamma: float | None = None) -> float:
    """FActScore's penalty for short fact lists: 1 if n > gamma else exp(1 - gamma / n); 0 for n = 0
    (gamma None: the YAML's)."""
    gamma = head_settings().gamma if gamma is None else gamma
    if n <= 0:
        return 0.0
    if gamma <= 0 or n > gamma:
        return 1.0
    return math.exp(1.0 - gamma / n)


def supported_flags(scores_per_fact: Sequence[Sequence[float]], threshold: float | None = None) -> list[bool]:
    """A fact is supported when any of its passages' entailment probabilities is >= threshold
    (None: the YAML's)."""
    threshold = head_settings().threshold if threshold is None else threshold
    return [any(s >= threshold for s in scores) for scores in scores_per_fact]


def fact_score(supported: Sequence[bool], settings: KnowRLSettings | None = None) -> float:
    """HEAD: supported fraction x length penalty (0 with no facts); v1.0.0: min(#supported / 15, 1)."""
    settings = settings or head_settings()
    n = len(supported)
    if settings.variant == "v1.0.0":
        return min(sum(supported) / settings.v1_cap, 1.0)
    if n == 0:
        return 0.0
    return sum(supported) / n * length_penalty(n, settings.gamma)


def gets_fact_term(correctness: float, refused: bool, settings: KnowRLSettings | None = None) -> bool:
    """HEAD: every -1 that is not a refusal; v1.0.0: every -1."""
    settings = settings or head_settings()
    return correctness == settings.incorrect and (settings.variant == "v1.0.0" or not refused)


def v1_skips_judge(answer: str, golds: Sequence[str]) -> bool:
    """v1.0.0's pre-check: no digit in the gold and none of its content words in the answer
    means -1 without a judge call (refusals are caught before this, by `is_refusal`)."""
    if any(ch.isdigit() for gold in golds for ch in gold):
        return False
    said = set(normalize_answer(answer).split())
    words = {w for gold in golds for w in normalize_answer(gold).split() if w not in STOPWORDS}
    return not (words & said)


def total(format_value: float, correctness: float, fact: float | None) -> float:
    """format + final, final = correctness (+ fact when the fact term applies)."""
    return format_value + correctness + (fact if fact is not None else 0.0)


__all__ = ["GRADES", "GRADE_PARSES", "RETRIEVALS", "VARIANTS", "KnowRLSettings", "answer_of", "fact_score", "format_ok",
           "gets_fact_term", "grade_reward", "head_settings", "is_refusal", "length_penalty", "parse_grade",
           "reasoning_of", "supported_flags", "total", "v1_skips_judge"]
