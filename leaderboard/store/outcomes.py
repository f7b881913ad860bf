"""Per-question correctness of a row, stored compactly in the row itself (`outcomes`).

Why in the row and not a side table: a row is the unit that is validated, exported to
results files and re-imported; keeping its outcomes inside it means an exported row can
still be compared with a paired bootstrap, and no second table has to be kept in step.
The cost is small: one bit per question, base64 (TriviaQA's 17,944 questions: 3 KB).

    {"field": "correct", "n": 3610, "ids_sha256": sha256 of the ids joined by newlines,
     "encoding": "packbits-base64/1", "bits": "..."}

Two rows pair only when their `ids_sha256` are equal (same questions in the same order).
Rows recorded before this field (or from a samples.jsonl without 0/1 correctness) have no
`outcomes`; tables then show no interval for them and say so in the legend. The field is
derived from samples.jsonl like the metrics, so it is not compared on a re-add (rows.py).
"""
from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

ENCODING = "packbits-base64/1"
CORRECT_FIELDS = ("correct", "score", "accuracy")  # first one present in a samples.jsonl row


def read_samples(path: Path) -> list[dict[str, Any]] | None:
    """The rows of a samples.jsonl, or None when the file is absent."""
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def ids_hash(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


def encode(samples: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The compact vector of a set's samples; None unless every sample has a 0/1 correctness."""
    if not samples:
        return None
    field = next((f for f in CORRECT_FIELDS if f in samples[0]), None)
    if field is None:
        return None
    values = [s.get(field) for s in samples]
    if any(v not in (0, 1, True, False) or isinstance(v, float) and v not in (0.0, 1.0) for v in values):
        return None
    bits = np.packbits(np.array([bool(v) for v in values], dtype=bool))
    return {"field": field, "n": len(values), "ids_sha256": ids_hash([str(s.get("id")) for s in samples]),
            "encoding": ENCODING, "bits": base64.b64encode(bits.tobytes()).decode("ascii")}


def decode(outcomes: dict[str, Any] | None) -> np.ndarray | None:
    """The 0/1 vector (float) of a row's `outcomes`, or None when absent or of another encoding."""
    if not outcomes or outcomes.get("encoding") != ENCODING:
        return None
    raw = np.frombuffer(base64.b64decode(outcomes["bits"]), dtype=np.uint8)
    return np.unpackbits(raw)[: int(outcomes["n"])].astype(float)


def of_row(row: dict[str, Any]) -> tuple[str, np.ndarray] | None:
    """(ids hash, vector) of a row, or None when it stores no usable outcomes."""
    outcomes = row.get("outcomes")
    vector = decode(outcomes)
    return None if vector is None else (str(outcomes["ids_sha256"]), vector)  # type: ignore[index]
