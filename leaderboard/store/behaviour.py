"""Per-question answer behaviour of a row, stored compactly in the row (`behaviour`).

Accuracy says whether an answer was right; a reward also moves how a model answers: the answer
format, abstaining, the answer's length. The behaviour table compares those with Raw question by
question (tables/behaviour.py: paired bootstrap intervals and MDEs), so a row keeps them per
question, next to `outcomes` (the correctness bits) and in the same question order:

    {"encoding": "behaviour/1", "n": 100, "ids_sha256": sha256 of the ids joined by newlines,
     "format_ok": packbits-base64 or null, "na": packbits-base64 or null,
     "answer_words": base64 of little-endian uint16 (capped at 65,535) or null,
     "completion_words": the same, for the whole completion}

A field is null when some sample lacks it (samples.jsonl written before the evaluator recorded
it); the table then shows the set's metric without an interval. Derived from samples.jsonl, so
it is not compared on a re-add (rows.py DERIVED). Size: TriviaQA's 17,944 questions take about
6 KB of bits and 48 KB of word counts.
"""
from __future__ import annotations

import base64
from typing import Any

import numpy as np

from .outcomes import ids_hash

ENCODING = "behaviour/1"
BIT_FIELDS = ("format_ok", "na")
WORDS_FIELDS = ("answer_words", "completion_words")  # completion_words: evaluations from 2026-12-04 on
WORDS_CAP = 65_535


def _bits(values: list[Any]) -> str | None:
    if any(not isinstance(v, bool) and v not in (0, 1) for v in values):
        return None
    return base64.b64encode(np.packbits(np.array([bool(v) for v in values], dtype=bool)).tobytes()).decode("ascii")


def _words(values: list[Any]) -> str | None:
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in values):
        return None
    array = np.minimum(np.array(values, dtype=np.float64), WORDS_CAP).round().astype("<u2")
    return base64.b64encode(array.tobytes()).decode("ascii")


def encode(samples: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The row's `behaviour` from its samples.jsonl rows; None when no sample has any field."""
    if not samples or not any(f in samples[0] for f in (*BIT_FIELDS, *WORDS_FIELDS)):
        return None
    out: dict[str, Any] = {"encoding": ENCODING, "n": len(samples),
                           "ids_sha256": ids_hash([str(s.get("id")) for s in samples])}
    for field in BIT_FIELDS:
        values = [s.get(field) for s in samples]
        out[field] = None if any(v is None for v in values) else _bits(values)
    for field in WORDS_FIELDS:
        words = [s.get(field) for s in samples]
        out[field] = None if any(v is None for v in words) else _words(words)
    return out


def decode(behaviour: dict[str, Any] | None) -> dict[str, np.ndarray] | None:
    """{field: float vector} of the fields a row's `behaviour` holds, or None."""
    if not behaviour or behaviour.get("encoding") != ENCODING:
        return None
    n = int(behaviour["n"])
    out: dict[str, np.ndarray] = {}
    for field in BIT_FIELDS:
        if behaviour.get(field):
            raw = np.frombuffer(base64.b64decode(behaviour[field]), dtype=np.uint8)
            out[field] = np.unpackbits(raw)[:n].astype(float)
    for field in WORDS_FIELDS:
        if behaviour.get(field):
            out[field] = np.frombuffer(base64.b64decode(behaviour[field]), dtype="<u2")[:n].astype(float)
    return out


def of_row(row: dict[str, Any]) -> tuple[str, dict[str, np.ndarray]] | None:
    """(ids hash, {field: vector}) of a row, or None when it stores no behaviour."""
    found = decode(row.get("behaviour"))
    return None if not found else (str(row["behaviour"]["ids_sha256"]), found)
