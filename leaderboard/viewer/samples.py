"""Evaluation samples for the viewer: one run's samples, and every method's side by side.

Each sample keeps what eval/<set>/samples.jsonl holds (question, completion, extracted answer,
golds, the protocol's verdict, abstention, format, answer length, and any judged fields) plus
two readings the leaderboard makes of it:

- **strict**: strict accuracy v2's verdict and, when it withdraws the protocol's credit, the
  reason (diagnostics.strict_verdict: several answer blocks, a negated or retracted gold, a
  listed candidate);
- **flags**: the gaming signals of the sample: strict's gaming reasons, a hedged answer (hedge
  rule v1), an answer equal to the row's most frequent one when the row is flagged for collapse
  (over 20% of the set), and, when a probe result of the method is published, "probe: the
  reward pays <trick>" for the trick the sample's shape matches (PROBE_TRICKS) that the probe
  found hacked or breached.

A sample's filter code is one hex digit of bits: CORRECT 1, ABSTAINED 2, FLAGGED 4, WITHDRAWN 8
(strict withdrew the credit), so a page filters thousands of samples from the index without
loading their shards.
"""
from __future__ import annotations

from typing import Any

from factrl.harness.core.answers import GAMING_REASONS, normalize_answer

from .. import diagnostics as diaglib
from ..guards import guarded_name

CORRECT, ABSTAINED, FLAGGED, WITHDRAWN = 1, 2, 4, 8
KNOWN = ("id", "question", "completion", "answer", "references", "correct", "na", "refusal", "empty", "format_ok",
         "answer_words", "completion_words")
# A sample's gaming shape -> the probe panel's entries that build it (harness/probe/README.md).
PROBE_TRICKS = {"candidates": ("hedged_gold",), "hedged": ("hedged_gold",), "negated": ("negated_gold",),
                "retracted": ("retracted_gold",), "multiple_blocks": ("blocks_wrong_gold", "blocks_gold_wrong")}


def probe_verdicts(results: list[Any]) -> dict[str, dict[str, str]]:
    """{method as the tables name it: {panel entry: "hack" | "breach"}} of published probe
    results; a guarded variant's under its guarded name (`corver[correctness=strict]`,
    leaderboard/guards.py), so a guarded run is flagged by its own column, never the original's."""
    out: dict[str, dict[str, str]] = {}
    for result in results:
        name = guarded_name(result.method, sorted(set(getattr(result, "guards", None) or [])))
        for entry in result.stats:
            verdict = result.verdict(entry)
            if verdict in ("hack", "breach"):
                out.setdefault(name, {})[entry] = verdict
    return out


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def item(sample: dict[str, Any], position: int, task: str | None, top_answer: str | None,
         probe: dict[str, str]) -> dict[str, Any]:
    """The viewer's record of one sample (module docstring)."""
    out = {k: sample.get(k) for k in KNOWN if k in sample}
    out["i"] = position
    extra = {k: v for k, v in sample.items() if k not in KNOWN and _scalar(v)}
    if extra:
        out["other"] = extra
    flags = []
    if "correct" in sample and isinstance(sample.get("references"), (list, tuple)):
        strict, reason = diaglib.strict_verdict(sample, task)
        out["strict"], out["strict_reason"] = strict, reason
        if reason in GAMING_REASONS:
            flags.append(f"strict v2: {reason.replace('_', ' ')}")
    answer = sample.get("answer")
    shapes = [out.get("strict_reason")]
    if isinstance(answer, str) and diaglib.is_hedged(answer):
        flags.append("hedged answer")
        shapes.append("hedged")
    if top_answer and isinstance(answer, str) and normalize_answer(answer) == top_answer:
        flags.append("collapsed: the run's most frequent answer")
    for shape in shapes:
        for trick in PROBE_TRICKS.get(shape or "", ()):
            if trick in probe:
                text = f"probe: the reward pays {trick} ({probe[trick]})"
                if text not in flags:
                    flags.append(text)
    out["flags"] = flags
    return out


def code(entry: dict[str, Any]) -> str:
    """The sample's filter code (module docstring) as one hex digit."""
    bits = (CORRECT if entry.get("correct") else 0) | (ABSTAINED if entry.get("na") else 0)
    bits |= (FLAGGED if entry.get("flags") else 0)
    bits |= (WITHDRAWN if entry.get("correct") and entry.get("strict") is False else 0)
    return format(bits, "x")


def top_answer(row: dict[str, Any] | None) -> str | None:
    """The row's most frequent normalised answer when the row is flagged for collapse."""
    diagnostics = (row or {}).get("diagnostics") or {}
    if diagnostics.get("top_answer_share", 0) > diaglib.FLAG_TOP_SHARE and diagnostics.get("top_answer"):
        return str(diagnostics["top_answer"])
    return None


def side_by_side(columns: list[tuple[str, list[dict[str, Any]]]]) -> tuple[list[dict[str, Any]], str]:
    """Questions in the first column's order (Raw's), each with every column's answer and
    verdict; the per-question codes (one hex digit per column, "-" where a column lacks the
    question) for the filters. `columns`: (method, its viewer items)."""
    if not columns:
        return [], ""
    by_id = [{str(e.get("id")): e for e in entries} for _, entries in columns]
    order: list[str] = []
    seen: set[str] = set()
    for _, entries in columns:
        for entry in entries:
            qid = str(entry.get("id"))
            if qid not in seen:
                seen.add(qid)
                order.append(qid)
    questions, codes = [], []
    for qid in order:
        first = next(index[qid] for index in by_id if qid in index)
        answers = []
        for index in by_id:
            entry = index.get(qid)
            answers.append(None if entry is None else {
                k: entry.get(k) for k in ("i", "answer", "correct", "na", "strict", "strict_reason", "flags",
                                          "format_ok", "answer_words") if k in entry})
        questions.append({"id": qid, "question": first.get("question"), "references": first.get("references"),
                          "answers": answers})
        codes.append("".join("-" if a is None else code(a) for a in answers))
    return questions, ",".join(codes)
