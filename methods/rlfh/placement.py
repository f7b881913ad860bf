"""Where RLFH's rewards land: the judge's echoed sentences mapped back onto the response, as the
release maps them (AlignRM/RLFH@78cd846 source/feedback/reward.py:152-188, source/utils.py:20-27),
with one guard.

1. The judged response is the text of the completion's sections (think, answer; or the whole
   completion when it has no tags), tags dropped, one section per line (`judged_text`).
2. An echoed sentence is located by its longest common SUBSTRING with that text (pylcs
   `lcs_string_idx`: the earliest such run in the echo, then in the text; `locate`). The
   release takes any run, even one character long; here an echo whose run is shorter than
   `echo_min_share` of its length is refused (`None`): the judge echoed something the
   response does not say, and the completion gets no signal (reward.py counts it).
3. info(sentence) goes on the token holding the run's last character; truth(statement) on the
   token holding the last character of the statement's longest common SUBSEQUENCE with the echo
   (pylcs `lcs_sequence_idx`, then each matched character moved to its earliest occurrence
   after the previous one, utils.py:20-27) whose echo position lies in the run; a statement
   with none is not placed (the release adds default_for_none = 0 there). Before each
   statement one trailing "." is dropped from the statement and from the echo, as reward.py:174-175
   does (the echo's cut accumulates over its statements).
4. A character maps to the first completion token whose span ends after it (`bisect_right` over
   the tokens' end offsets, reward.py:163,168); special tokens have no span and are skipped.
Checked against tests/reference_vectors/rlfh/rewards.json (upstream's labels_to_rewards).
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from factrl.harness.core.completions import Alignment


@dataclass(frozen=True)
class Judged:
    """The response text the judge reads, and where each of its characters sits in the alignment."""

    text: str
    segments: tuple[tuple[int, int, int], ...]  # (start in text, start in alignment.text, length)

    def to_alignment(self, position: int) -> int:
        """Alignment offset of judged `position` (a line break between sections: the end of the one before)."""
        for start, origin, length in reversed(self.segments):
            if position >= start:
                return origin + min(position - start, max(length - 1, 0))
        return self.segments[0][1] if self.segments else position


def judged_text(alignment: Alignment) -> Judged:
    parts, segments, at = [], [], 0
    for section in alignment.sections:
        raw = alignment.text[section.start:section.end]
        body = raw.strip()
        if not body:
            continue
        origin = section.start + (len(raw) - len(raw.lstrip()))
        if parts:
            at += 1  # the "\n" joining the sections
        segments.append((at, origin, len(body)))
        parts.append(body)
        at += len(body)
    return Judged("\n".join(parts), tuple(segments))


def lcs_substring_idx(echo: str, text: str) -> list[int]:
    """Per echo character, its index in `text` inside the longest common substring, else -1."""
    out = [-1] * len(echo)
    if not echo or not text:
        return out
    found = text.find(echo)
    if found >= 0:  # the whole echo occurs: its first occurrence, as the DP's first maximum
        return list(range(found, found + len(echo)))
    match = difflib.SequenceMatcher(None, echo, text, autojunk=False).find_longest_match(0, len(echo), 0, len(text))
    for k in range(match.size):
        out[match.a + k] = match.b + k
    return out


def lcs_sequence_idx(a: str, b: str) -> list[int]:
    """`_lcs_sequence_idx`, cached: a group's completions repeat statements and sentences, and the
    placement DP was the largest part left of RLFH's reward with judge=reference (a pure function:
    no value changes)."""
    return list(_lcs_sequence_idx(a, b))


@lru_cache(maxsize=8192)
def _lcs_sequence_idx(a: str, b: str) -> tuple[int, ...]:
    """Per character of `a`, its index in `b` in pylcs's longest common subsequence (the DP
    backtracked from the end: a match when the characters are equal, else up while the upper
    cell is at least the left one), each match then moved to the earliest occurrence of its
    character after the previous match (utils.lcs_sequence_idx).

    The DP rows are Hyyro's bit vectors (one big-int step per character of `a`): cell (i, j) is
    the number of zero bits of row i below bit j, so a row costs a few big-int operations, not
    a Python loop over `b`."""
    m, n = len(a), len(b)
    index = [-1] * m
    if not m or not n:
        return tuple(index)
    masks: dict[str, int] = {}
    for j, ch in enumerate(b):
        masks[ch] = masks.get(ch, 0) | (1 << j)
    full = (1 << n) - 1
    rows = [0]  # rows[i]: bits j where LCS(a[:i], b[:j + 1]) > LCS(a[:i], b[:j])
    v = full
    for ch in a:
        u = v & masks.get(ch, 0)
        v = ((v + u) | (v - u)) & full
        rows.append(~v & full)

    def cell(i: int, j: int) -> int:
        return (rows[i] & ((1 << j) - 1)).bit_count()

    i, j = m, n
    while i > 0 and j > 0:
        if a[i - 1] == b[j - 1]:
            index[i - 1] = j - 1
            i, j = i - 1, j - 1
        elif cell(i - 1, j) >= cell(i, j - 1):
            i -= 1
        else:
            j -= 1
    valid = [k for k, v in enumerate(index) if v != -1]
    for left, right in zip(valid, valid[1:]):
        lower, upper = index[left], index[right]
        index[right] = b.find(b[upper], lower + 1, upper + 1)
    return tuple(index)


def locate(echo: str, text: str, min_share: float) -> list[int] | None:
    """lcs_substring_idx(echo, text), or None when its run is under min_share of the echo."""
    positions = lcs_substring_idx(echo, text)
    run = sum(p != -1 for p in positions)
    return positions if run and run >= math.ceil(min_share * len(echo)) else None


def statement_chars(echo: str, statements: Sequence[str], echo_to_text: Sequence[int]) -> list[int | None]:
    """The text position each statement's truth reward goes to, or None (not placed)."""
    out: list[int | None] = []
    sentence = echo
    for statement in statements:
        statement = statement[:-1] if statement.endswith(".") else statement
        sentence = sentence[:-1] if sentence.endswith(".") else sentence
        picked = None
        for k in reversed([k for k in lcs_sequence_idx(statement, sentence) if k != -1]):
            if echo_to_text[k] != -1:
                picked = echo_to_text[k]
                break
        out.append(picked)
    return out


def token_for(spans: Sequence[tuple[int, int] | None], position: int) -> int | None:
    """The first token whose span ends after `position` (None: none does)."""
    for t, span in enumerate(spans):
        if span is not None and span[1] > position:
            return t
    return None


def last_token(spans: Sequence[tuple[int, int] | None]) -> int | None:
    return next((t for t in range(len(spans) - 1, -1, -1) if spans[t] is not None), None)


def sentence_at(alignment: Alignment, position: int) -> int | None:
    """Index of the alignment sentence holding `position` (for records), or None."""
    return next((s.index for s in alignment.sentences if s.start <= position < s.end), None)


__all__ = ["Judged", "judged_text", "last_token", "lcs_sequence_idx", "lcs_substring_idx", "locate",
           "sentence_at", "statement_chars", "token_for"]
