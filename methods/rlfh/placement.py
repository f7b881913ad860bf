"""Where RLFH's rewards land in a completion's tokens (BASELINES 3.2, "token granularity").

- info(sentence) goes on the sentence's last token: the last token the core's alignment
  (harness.completions.align, character offsets) maps to that sentence.
- truth(statement) goes on the token holding the last character of the statement's longest
  common subsequence (characters, case-folded) with its sentence, as RLFH's pylcs match does.
  Of the several LCS the earliest-ending one is taken (the shortest sentence prefix that
  holds an LCS), so a statement about a sentence's first clause lands on that clause, not on
  the sentence's final period; the statement's own trailing punctuation is ignored for the
  same reason. The token is kept inside the sentence's tokens (RLFH's no-label branch did not
  clamp its index, BASELINES 9). With `granularity: sentence`, or when the statement shares
  no character with the sentence, truth goes on the sentence's last token too.

The LCS uses Hyyro's bit-parallel recurrence (one big-int step per statement character), so
a step's hundreds of statements cost milliseconds, not a quadratic table each.
"""
from __future__ import annotations

from typing import Sequence

from factrl.harness.completions import Alignment, Sentence

_TRAILING = " \t\n.!?;:,"


def lcs_last_char(statement: str, sentence: str) -> int | None:
    """Index in `sentence` of the last character of its earliest-ending longest common
    subsequence with `statement` (case-folded); None when they share no character."""
    a, b = statement.casefold().rstrip(_TRAILING), sentence.casefold()
    if not a or not b:
        return None
    masks: dict[str, int] = {}
    for j, ch in enumerate(b):
        masks[ch] = masks.get(ch, 0) | (1 << j)
    full = (1 << len(b)) - 1
    v = full
    for ch in a:
        u = v & masks.get(ch, 0)
        v = ((v + u) | (v - u)) & full
    # Zero bits of v mark the sentence positions where LCS(statement, sentence[:j + 1]) grows;
    # the highest one ends the shortest prefix that reaches the full LCS length.
    zeros = ~v & full
    return zeros.bit_length() - 1 if zeros else None


def lcs_length(statement: str, sentence: str) -> int:
    """Length of that LCS (for tests and diagnostics)."""
    a, b = statement.casefold().rstrip(_TRAILING), sentence.casefold()
    masks: dict[str, int] = {}
    for j, ch in enumerate(b):
        masks[ch] = masks.get(ch, 0) | (1 << j)
    full = (1 << len(b)) - 1
    v = full
    for ch in a:
        u = v & masks.get(ch, 0)
        v = ((v + u) | (v - u)) & full
    return bin(~v & full).count("1")


def sentence_tokens(sigma: Sequence[int | None], index: int) -> tuple[int, int] | None:
    """(first, last) token mapped to sentence `index`, or None when none is."""
    hits = [t for t, s in enumerate(sigma) if s == index]
    return (hits[0], hits[-1]) if hits else None


def token_at(spans: Sequence[tuple[int, int] | None], position: int) -> int | None:
    """The token whose character span holds `position`."""
    for t, span in enumerate(spans):
        if span is not None and span[0] <= position < span[1]:
            return t
    return None


def statement_token(alignment: Alignment, sentence: Sentence, statement: str, *, granularity: str = "token"
                    ) -> tuple[int, bool] | None:
    """(token for the statement's truth reward, located by LCS?) or None when the sentence has
    no token (cannot happen for a sentence of the alignment, checked anyway)."""
    bounds = sentence_tokens(alignment.sigma, sentence.index)
    if bounds is None:
        return None
    first, last = bounds
    if granularity == "token":
        char = lcs_last_char(statement, sentence.text)
        if char is not None:
            t = token_at(alignment.spans, sentence.start + char)
            if t is not None:
                return min(max(t, first), last), True
    return last, False


__all__ = ["lcs_last_char", "lcs_length", "sentence_tokens", "statement_token", "token_at"]
