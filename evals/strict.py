"""Strict accuracy of a scored set, beside the scorer's accuracy (evals/README.md, "Strict accuracy").

A sample counts when the scorer credits it (`correct`) and strict accuracy does too
(factrl.harness.core.answers.strict_correct on the whole completion against the sample's
references); TruthfulQA answers are sentences, so there only the one-answer-block rule applies.
Multi-hop sets (EM / F1, no `correct`) have none. Written as the set's metrics.json
`strict_accuracy` ({"value", "n", "rule", "withdrawn": {reason: count}}) by every scoring
(`harness eval`, `harness run`, `harness score`), so saved generations can be rescored strictly
without a leaderboard; the leaderboard's row diagnostics use the same verdict
(leaderboard/diagnostics.py). It never changes `metrics`, the scorer's numbers.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Mapping

from factrl.harness.core.answers import STRICT_VERSION, single_block, strict_correct


def strict_verdict(sample: Mapping[str, Any], task: str | None = None) -> tuple[bool, str | None]:
    """(strictly correct, reason strict withdrew the scorer's credit) of one scored sample."""
    if not sample.get("correct"):
        return False, None
    completion = sample.get("completion")
    if not isinstance(completion, str) or not completion:
        completion = f"<answer>{sample.get('answer') or ''}</answer>"  # samples written without it
    if task == "truthfulqa":
        return (True, None) if single_block(completion) else (False, "multiple_blocks")
    verdict = strict_correct(completion, [str(r) for r in sample["references"]], question=sample.get("question"))
    return verdict.correct, verdict.reason


def strict_summary(samples: Iterable[Mapping[str, Any]], task: str | None = None) -> dict[str, Any] | None:
    """The set's `strict_accuracy` entry, or None when its samples carry no `correct` (multi-hop)."""
    rows = list(samples)
    if not rows or not all("correct" in s and isinstance(s.get("references"), (list, tuple)) for s in rows):
        return None
    verdicts = [strict_verdict(s, task) for s in rows]
    withdrawn = Counter(why for _, why in verdicts if why)
    return {"value": sum(ok for ok, _ in verdicts) / len(rows), "n": len(rows), "rule": STRICT_VERSION,
            "withdrawn": dict(sorted(withdrawn.items()))}


def strict_line(entry: Mapping[str, Any] | None) -> str:
    """`strict 0.4000 (v3; withdrawn: 2 fragment, 1 candidates)` for a printed summary ("" when none)."""
    if not entry:
        return ""
    why = ", ".join(f"{count} {reason}" for reason, count in (entry.get("withdrawn") or {}).items())
    return f"strict {entry['value']:.4f} (v{entry.get('rule')}; withdrawn: {why or 'none'})"


__all__ = ["strict_line", "strict_summary", "strict_verdict"]
