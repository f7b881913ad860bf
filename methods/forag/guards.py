"""FoRAG's named guards against repetition (docs/CONTRACTS.md "Guards"; both off by default = the
design as it stands), as pure functions over one completion's sub-claims in completion order
(sentence by sentence, each sentence's sub-claims in the judge's order).

- `dedupe_statements`: a sub-claim whose normalised text (`normalised`) already occurred earlier
  in the completion (in any sentence, think or answer block) is a duplicate and earns no
  positive value.
- `max_rewarded_statements: N`: only the completion's first N sub-claims earn positive value;
  when deduplicating, duplicates are not counted among the N.

A guard never removes a sub-claim and never touches a negative value: it only sets a supported
sub-claim's positive value to 0. Every sentence reward (mean or sum of its values) is monotone
in those values, so a guard can never raise a completion's return; it only stops repeats and
length from paying. Duplicates are found (and logged) whether or not the guard is on.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Iterable

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


__all__ = ["guarded_value", "mark", "normalised"]
