"""FoRAG's named guards against repetition (docs/CONTRACTS.md "Guards"; both off by default = the
design as it stands), as pure functions over one completion's sub-claims in completion order
(sentence by sentence, each sentence's sub-claims in the judge's order).

- `dedupe_statements`: a sub-claim whose normalised text (`normalised`) already occurred earlier
  in the completion (in any sentence, think or answer block) is a duplicate and earns no
  positive value.
- `max_rewarded_statements: N`: only the completion's first N sub-claims earn positive value;
  when deduplicating, duplicates are not counted among the N.

- `positive_cap: answer`: the answer block read by strict accuracy (factrl.harness.core.answers.reading)
  against the row's golds; in a completion whose answer it does not credit (a wrong answer, a
  refusal, none, or one it withdraws), a sub-claim that states that answer, or a gold the answer
  does not give, is worth `unsupported` whatever the judge said, and no other sub-claim earns
  positive value. FoRAG has no correctness
  term, so without it any supported sub-claim pays a wrong answer (the row's own evidence,
  padding) and a judge that labels the wrong answer supported pays it too; with it a wrong answer
  is worth at most what its own statements cost, judge-independently.

A guard never removes a sub-claim and never touches a negative value: it only sets a supported
sub-claim's positive value to 0, or (positive_cap) a value to `unsupported`, the lowest. Every sentence reward (mean or sum of its values) is monotone
in those values, so a guard can never raise a completion's return; it only stops repeats and
length from paying. Duplicates are found (and logged) whether or not the guard is on.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Iterable

from factrl.harness.core.answers.reading import AnswerReading

_NOT_WORD = re.compile(r"[^\w]+")


def normalised(claim: str) -> str:
    """The key two sub-claims are the same statement under: NFKC, case-folded, every run of
    punctuation and spaces one space ("Marie Curie was born in Warsaw." = "marie curie  was born
    in warsaw")."""
    text = unicodedata.normalize("NFKC", str(claim)).casefold()
    return _NOT_WORD.sub(" ", text).strip()


def mark(claims: Iterable[str], *, dedupe: bool, max_rewarded: int | None) -> list[tuple[bool, bool]]:
    """(duplicate, may_earn_positive) per sub-claim of one completion, in the order given."""
    seen: set[str] = set()
    counted = 0
    out = []
    for claim in claims:
        key = normalised(claim)
        duplicate = key in seen
        seen.add(key)
        if dedupe and duplicate:
            out.append((True, False))
            continue
        out.append((duplicate, max_rewarded is None or counted < max_rewarded))
        counted += 1
    return out


def guarded_value(value: float, may_earn_positive: bool) -> tuple[float, bool]:
    """(the sub-claim's value under the guards, whether a guard set it to 0)."""
    if value > 0 and not may_earn_positive:
        return 0.0, True
    return value, False


def capped(claims: list[str], reading: AnswerReading | None) -> list[bool | None]:
    """positive_cap per sub-claim: None = untouched, True = states the uncredited answer or a gold
    it does not give (worth `unsupported`), False = may earn no positive value. `reading` None:
    the guard is off."""
    if reading is None or reading.credited:
        return [None] * len(claims)
    return [reading.states_answer(c) or reading.states_gold(c) for c in claims]


__all__ = ["capped", "guarded_value", "mark", "normalised"]
