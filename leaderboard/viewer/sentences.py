"""A completion's reward records as coloured sentences: which text each reward was given to.

Methods record different units in train/reward_records.jsonl (methods/*/reward.py): CorVer one
line per sentence (`reward`, `status`), FSPO per sentence (`step_value` -1/0/+1, `score`,
`factual`), FoRAG per sub-claim of a sentence (`value`, `supported`), RLFH per statement of an
echoed sentence (`truth`, `verdict`, and the echo's `info`), KnowRL and NOVER one line per
completion (`grade`, `total`; `reward`, `perplexity`). One reading serves them all:

- a record with `sentence_index` belongs to that sentence; its text is `sentence`, else `echo`;
- its value is the first of VALUE_KEYS it has (a number); a sentence's value is the sum over its
  records, plus each ONCE_PER_SENTENCE term once (RLFH's informativeness of the echo); a sentence
  whose records carry no number has none (shown uncoloured, e.g. a failed judge item);
- its verdicts are the values of VERDICT_KEYS (`status`, `verdict`, `supported`, `factual`);
- a record without `sentence_index` describes the whole completion: its scalar fields are the
  completion's reward detail (KnowRL's grade and terms, NOVER's score).

Each sentence is then found in the completion's text, in order (`locate`): its character span is
what the page colours; a sentence not found verbatim (a splitter that normalised spaces) is
listed under the completion instead.
"""
from __future__ import annotations

import math
from typing import Any

VALUE_KEYS = ("reward", "value", "step_value", "truth")
ONCE_PER_SENTENCE = ("info",)
VERDICT_KEYS = ("status", "verdict", "supported", "factual")
TEXT_KEYS = ("sentence", "echo")
JOIN_KEYS = ("step", "process", "completion", "row_id", "question_id")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _verdict(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if key == "supported":
        return "supported" if value is True else ("not supported" if value is False else str(value))
    if key == "factual":
        return "factual" if value is True else "not factual"
    return str(value)


def sentences(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(sentences in index order, completion-level detail) of one completion's records."""
    by_index: dict[int, dict[str, Any]] = {}
    detail: dict[str, Any] = {}
    for record in records:
        index = record.get("sentence_index")
        if not isinstance(index, int) or isinstance(index, bool):
            for key, value in record.items():
                if key not in JOIN_KEYS and (value is None or isinstance(value, (str, int, float, bool))):
                    detail[key] = value
            continue
        item = by_index.setdefault(index, {"i": index, "text": None, "value": None, "verdicts": [], "once": {}})
        if item["text"] is None:
            item["text"] = next((str(record[k]) for k in TEXT_KEYS if isinstance(record.get(k), str)), None)
        value = next((_number(record.get(k)) for k in VALUE_KEYS if _number(record.get(k)) is not None), None)
        if value is not None:
            item["value"] = (item["value"] or 0.0) + value
        for key in ONCE_PER_SENTENCE:
            extra = _number(record.get(key))
            if extra is not None:
                item["once"][key] = extra
        for key in VERDICT_KEYS:
            verdict = _verdict(key, record.get(key))
            if verdict is not None and key in record:
                item["verdicts"].append(verdict)
    out = []
    for index in sorted(by_index):
        item = by_index.pop(index)
        once = item.pop("once")
        if once:
            item["value"] = (item["value"] or 0.0) + sum(once.values())
        out.append(item)
    return out, detail


def locate(text: str, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set each sentence's `start`/`end` in `text` (searching forward from the previous one); a
    sentence not found keeps `start: None`. Located sentences drop their `text` (the page cuts
    it from the completion), so a shard carries each character once."""
    cursor = 0
    for item in found:
        needle = (item.get("text") or "").strip()
        at = text.find(needle, cursor) if needle else -1
        if at < 0 and needle:
            at = text.find(needle)  # out of order (an echo of an earlier sentence)
        if at >= 0 and needle:
            item["start"], item["end"] = at, at + len(needle)
            cursor = max(cursor, at + len(needle))
            item.pop("text", None)
        else:
            item["start"] = item["end"] = None
    return found


def scale(values: list[float]) -> float:
    """The run's colour scale: the largest |value| of its sentences (1.0 when none)."""
    biggest = max((abs(v) for v in values), default=0.0)
    return biggest if biggest > 0 else 1.0
