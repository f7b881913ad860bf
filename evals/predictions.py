"""Per-sample JSONL files: reading predictions defensively, writing them safely.

A predictions file has one JSON object per line with at least `id` and `completion` (the
generations.jsonl and samples.jsonl the evaluator writes both qualify). Reading never
crashes on bad bytes: it raises a `DataError` naming the file, line and problem. Matching
against a set is strict: missing ids, extra ids, duplicates and question mismatches fail
with counts and the first offending id, because a score over the wrong questions is worse
than no score.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable, Iterator

from factrl.harness.core.errors import DataError
from factrl.harness.core.rundir import atomic_write

from .sets import EvalSet

_SURROGATES = re.compile(r"[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` with lone UTF-16 surrogates (valid in JSON escapes, not in UTF-8) replaced."""
    return _SURROGATES.sub("\ufffd", text) if not text.isascii() else text


def iter_jsonl(path: Path, *, repair_tail: bool = False) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line.

    repair_tail: a final line without its newline that does not parse is the trace of an
    interrupted write; truncate it away instead of failing (used when resuming generation).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err.strerror or err}).") from None
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            # A byte-order mark (Windows editors write one) is accepted, as in data files.
            obj = json.loads(raw.decode("utf-8-sig" if number == 1 else "utf-8"))
        except UnicodeDecodeError as err:
            raise DataError(f"{path}:{number}: not UTF-8 (byte {err.start} of the line); "
                            f"write predictions as UTF-8 JSON lines.") from None
        except json.JSONDecodeError as err:
            if repair_tail and number == len(lines) and not data.endswith(b"\n"):
                with open(path, "r+b") as handle:
                    handle.truncate(len(data) - len(raw))
                return
            raise DataError(f"{path}:{number}: invalid JSON ({err.msg} at column {err.colno}).") from None
        if not isinstance(obj, dict):
            raise DataError(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}.")
        yield number, obj


def read_predictions(path: Path) -> dict[str, dict]:
    """id -> row of a predictions file; each row's `completion` is a cleaned string."""
    rows: dict[str, dict] = {}
    for number, obj in iter_jsonl(path):
        if "id" not in obj:
            raise DataError(f"{path}:{number}: field 'id' is missing (the id of the set's question).")
        if not isinstance(obj["id"], (str, int)) or isinstance(obj["id"], bool):
            raise DataError(f"{path}:{number}: field 'id' must be a string or integer, got {type(obj['id']).__name__}.")
        if "question" in obj and not isinstance(obj["question"], str):
            raise DataError(f"{path}:{number}: field 'question' must be a string (the question's text) or left "
                            f"out, got {type(obj['question']).__name__}.")
        completion = obj.get("completion")
        if completion is None and "completion" not in obj:
            raise DataError(f"{path}:{number}: field 'completion' is missing (the model's full output).")
        if not isinstance(completion, str):
            raise DataError(f"{path}:{number}: field 'completion' must be a string, got {type(completion).__name__}.")
        key = str(obj["id"])
        if key in rows:
            raise DataError(f"{path}:{number}: id {key!r} appears twice.")
        rows[key] = {**obj, "id": key, "completion": clean_text(completion)}
    return rows


def align(eval_set: EvalSet, rows: dict[str, dict], where: str) -> list[str]:
    """Completions in the set's record order, or a DataError describing the mismatch."""
    expected = [r.id for r in eval_set.records]
    missing = [i for i in expected if i not in rows]
    extra = [i for i in rows if eval_set.index(i) is None]
    if missing or extra:
        parts = [f"{len(rows)} predictions for {len(expected)} questions of set '{eval_set.name}'"
                 + (f" (limit {eval_set.limit})" if eval_set.limit else "")]
        if not rows:
            parts.append("the file is empty")
        if missing:
            parts.append(f"{len(missing)} ids missing (first: {missing[0]!r})")
        if extra:
            parts.append(f"{len(extra)} ids not in the set (first: {extra[0]!r})")
        raise DataError(f"{where}: " + "; ".join(parts) + ". Score against the set the predictions were made "
                        "for (harness score --set/--data/--limit).")
    completions = []
    for record in eval_set.records:
        row = rows[record.id]
        question = row.get("question")
        if question is not None and not isinstance(question, str):
            raise DataError(f"{where}: id {record.id!r}: field 'question' must be a string, got "
                            f"{type(question).__name__}.")
        if question is not None and question.strip() != record.question.strip():
            raise DataError(f"{where}: id {record.id!r} has question {question[:60]!r} but set '{eval_set.name}' "
                            f"has {record.question[:60]!r}: the predictions were made for another version "
                            f"of the set.")
        completions.append(row["completion"])
    return completions


def write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    """Write rows atomically (`atomic_write`: temp file + rename)."""
    def write(handle) -> None:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False))
            handle.write("\n")

    atomic_write(path, write)


class JsonlAppender:
    """Appends one line per finished sample and flushes, so a killed run loses at most one line."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "a", encoding="utf-8")

    def write(self, row: dict) -> None:
        self._handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()
