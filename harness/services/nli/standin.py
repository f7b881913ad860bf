"""Deterministic lexical NLI stand-in: the embedded default where HHEM / DeBERTa weights are
not reachable (offline CPU machines). It is NOT an NLI model; every result records it as a
stand-in (`describe()["stand_in"] is True`).

score(premise, hypothesis), in [0, 1]:
1. words = lower-cased runs of letters/digits (apostrophes kept inside a word, commas inside
   numbers dropped: "1,000" = "1000"); light plural stemming ("cities" -> "city", "cats" -> "cat");
2. claims = the hypothesis's numbers and its non-stopword words (negations excluded);
   no claims -> 0.5 (nothing to check: undecided, so not "factual" under FSPO's > 0.5);
3. score = share of claims found in the premise;
4. a hypothesis number absent from the premise caps the score at 0.2 (a wrong number is a
   contradiction, not a near miss); so does a negated hypothesis ("not", "never", "n't", ...)
   against a premise with no negation at all.
Cost is linear in text length; no model, no randomness, same score on every machine.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .base import NLI_VERSION, NLIScorer

STANDIN_VERSION = "1"  # bump when any rule below changes (it changes scores)
_WORD = re.compile(r"[a-z0-9]+(?:['][a-z]+|[.,][0-9]+)*")
NEGATIONS = frozenset("not no never none nobody nothing neither nor without cannot".split())
STOPWORDS = frozenset("""
a an the and or but if then so of in on at to for from by with as into onto over under about than
is are was were be been being am do does did doing have has had having will would shall should can
could may might must this that these those it its it's he she they them his her their there here
which who whom whose what when where why how also very just only such some any each all both
i we you me my our your us one s
""".split())
CAP = 0.2  # score ceiling for a contradicted number or an unmatched negation


def _stem(word: str) -> str:
    if any(ch.isdigit() for ch in word):
        return word  # numbers match exactly
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _words(text: str) -> list[str]:
    text = text.lower().replace("\u2019", "'")
    out = []
    for word in _WORD.findall(text):
        if any(ch.isdigit() for ch in word):
            out.append(word.replace(",", ""))
        else:
            out.append(word)
    return out


def _negated(words: list[str]) -> bool:
    return any(w in NEGATIONS or w.endswith("n't") for w in words)


@lru_cache(maxsize=4096)
def _analysed(text: str) -> tuple[frozenset[str], bool, tuple[str, ...]]:
    """(stems, negated, words) of a text. Cached: the judge's reference answers score every
    statement of a completion against the same few passages (RLFH: about 9 s of a 3 x 16 batch's
    15 s went to re-reading them); the score is a pure function of the texts, so caching changes no
    value."""
    words = _words(text)
    return frozenset(_stem(w) for w in words), _negated(words), tuple(words)


@lru_cache(maxsize=4096)
def _claims(hypothesis: str) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """(numbers, claims, negated) of a hypothesis (step 2), cached like `_analysed`."""
    _, negated, words = _analysed(hypothesis)
    numbers = [w for w in dict.fromkeys(words) if any(ch.isdigit() for ch in w)]
    content = [_stem(w) for w in dict.fromkeys(words)
               if w not in STOPWORDS and w not in NEGATIONS and not w.endswith("n't") and w not in numbers]
    return tuple(numbers), tuple(dict.fromkeys(numbers + content)), negated


def lexical_support(premise: str, hypothesis: str) -> float:
    """The stand-in's score for one pair (module docstring)."""
    numbers, claims, hypothesis_negated = _claims(hypothesis)
    if not claims:
        return 0.5
    have, premise_negated, _ = _analysed(premise)
    score = sum(claim in have for claim in claims) / len(claims)
    if any(number not in have for number in numbers):
        score = min(score, CAP)
    if hypothesis_negated and not premise_negated:
        score = min(score, CAP)
    return score


class StandinScorer(NLIScorer):
    backend = "standin"

    def __init__(self, batch_size: int = 16):
        super().__init__()
        self.batch_size = batch_size  # unused (no model); kept so describe() matches the config

    @classmethod
    def from_settings(cls, settings: Any) -> "StandinScorer":
        """The registry's `nli` entry `standin` (loader.load_nli)."""
        return cls(settings.batch_size)

    def _score(self, pairs: list[tuple[str, str]]) -> list[float]:
        return [lexical_support(premise, hypothesis) for premise, hypothesis in pairs]

    def describe(self) -> dict[str, Any]:
        return {"kind": "nli", "backend": "standin", "model": None, "revision": None, "stand_in": True,
                "label": "lexical NLI stand-in", "version": NLI_VERSION, "standin_version": STANDIN_VERSION,
                "note": ("deterministic content-word overlap of the hypothesis in the premise, with number and "
                         "negation checks; it is not HHEM-2.1-Open or DeBERTa NLI. Use nli.backend=hhem or "
                         "deberta with the model's weights for a faithful run.")}
