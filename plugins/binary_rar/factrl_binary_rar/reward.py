"""The Binary RAR reward callable: 1 when the verifier finds no contradiction between the response
and the evidence retrieved for it, else 0, on every token of the completion.

Per completion (the model's response prefix, e.g. "<think>", put back in front):
1. the response: the text after the first think block, or the whole completion when there is none
   (the release's split, train.py:334-340: `<think>(.*?)</think>(.*)`);
2. its evidence: the top `method.top_k` passages of the row's articles in the harness's evidence
   store, ranked by BM25 with the response as the query (`EvidenceStore.for_row`; the release
   ranks 512-token chunks of the prompt's cached documents with rank_bm25, the response as the
   query, train.py:149-162,354-356), each written "title\\n\\ntext" as the release writes a chunk;
3. one judge item per completion with evidence, all of a step in one `ask_many`.

No signal (None): a row whose articles the store does not hold (`no_evidence`; the release skips
prompts without documents, train.py:459-467) and a failed judge item (`judge_failed`, the failure
rule; the release scored it 0.0). More than judge.max_failed_share failed items stop the step.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from factrl.harness.core.method import RewardOutput
from factrl.harness.core.settings import Settings, in_range

from .prompts import VERIFY

BINARY_RAR_DEFAULTS = {
    "top_k": 8,            # the release's bm25_top_k (train.py:530, README.md, configs/verifier_*.json)
    "supported": 1.0,      # no contradiction found (the release's reward, train.py:193-246)
    "contradicted": 0.0,   # a contradiction found
}
DIAGNOSTIC_KEYS = ("supported_rate", "contradicted_rate", "no_evidence_rate", "passages_mean", "judge_items",
                   "judge_failed", "no_signal_judge", "reward_mean", "judge_seconds", "retrieval_seconds")
_SPLIT = re.compile(r"<think>(.*?)</think>(.*)", re.DOTALL)  # train.py:334


@dataclass(frozen=True)
class BinaryRARSettings(Settings):
    """`method.*` of method=binary_rar (BINARY_RAR_DEFAULTS documents each key)."""

    OWNER = "method"
    DEFAULTS = BINARY_RAR_DEFAULTS
    RANGES = {"top_k": "[1, 64]", "supported": "any", "contradicted": "any"}  # contradicted <= supported (__post_init__)
    IGNORE = ("name",)

    top_k: int
    supported: float
    contradicted: float

    def __post_init__(self) -> None:
        in_range("top_k", self.top_k, 1, 64)
        if self.contradicted > self.supported:
            raise ValueError(f"contradicted={self.contradicted} > supported={self.supported}: the binary reward pays "
                             f"a response without contradiction at least as much")


def response_of(turn: str) -> str:
    """What the release verifies: the text after the first think block, else the whole response."""
    found = _SPLIT.search(turn)
    return found.group(2) if found else turn


@dataclass
class _Item:
    index: int
    row: Mapping[str, Any]
    response: str
    passages: list[str] | None = None
    score: int | None = None
    value: float | None = None
    reason: str | None = None
    error: str | None = None


class BinaryRARReward:
    """reward(*, completions, completion_ids, rows, **kwargs) -> RewardOutput."""

    name = "binary_rar"

    def __init__(self, *, judge: Any, store: Any, settings: BinaryRARSettings | None = None, prefix: str = ""):
        self.judge, self.store = judge, store
        self.settings = settings if settings is not None else BinaryRARSettings.from_mapping()
        self.prefix, self.prompt = str(prefix or ""), VERIFY
        self.__name__ = "binary_rar"

    def _retrieve(self, item: _Item) -> None:
        passages = self.store.for_row(dict(item.row), item.response, self.settings.top_k)
        item.passages = [f"{p.title}\n\n{p.text}" for p in passages]  # a chunk is title + "\n\n" + text (train.py:131)
        if not item.passages:
            item.reason = "no_evidence"

    def __call__(self, *, completions: Sequence[str], completion_ids: Sequence[Sequence[int]],
                 rows: Sequence[Mapping[str, Any]], **kwargs: Any) -> RewardOutput:
        if not (len(completions) == len(completion_ids) == len(rows)):
            raise ValueError(f"binary_rar: {len(completions)} completions, {len(completion_ids)} completion_ids and "
                             f"{len(rows)} rows: give one row per completion")
        items = [_Item(b, row, response_of(self.prefix + (text or ""))) for b, (text, row)
                 in enumerate(zip(completions, rows))]
        started = time.perf_counter()
        for item in items:
            self._retrieve(item)
        retrieval = time.perf_counter() - started
        asked = [i for i in items if i.reason is None]
        started = time.perf_counter()
        results = self.judge.ask_many(self.prompt, [
            {"instruction": str(i.row.get("question", "")), "response": i.response, "documents": i.passages}
            for i in asked]) if asked else []
        judge_seconds = time.perf_counter() - started
        if results:  # above judge.max_failed_share the run stops here, with the counts (resumable)
            self.judge.check_failed_share(results, where="one Binary RAR reward step (verifications)")
        s = self.settings
        for item, result in zip(asked, results):
            if result.ok:
                item.score = int(result.value)
                item.value = s.supported if item.score == 1 else s.contradicted
            else:
                item.reason, item.error = "judge_failed", str(result.error)
        returns = [None if i.value is None else [i.value] * len(ids) for i, ids in zip(items, completion_ids)]
        return RewardOutput(returns, self._diagnostics(items, results, judge_seconds, retrieval),
                            [_record(i) for i in items], no_signal_reasons=[i.reason for i in items])

    def _diagnostics(self, items: list[_Item], results: list[Any], judge_seconds: float,
                     retrieval: float) -> dict[str, float]:
        n = max(len(items), 1)
        values = [i.value for i in items if i.value is not None]
        with_evidence = [i for i in items if i.passages]
        out = {
            "supported_rate": sum(i.score == 1 for i in items) / n,
            "contradicted_rate": sum(i.score == 0 for i in items) / n,
            "no_evidence_rate": sum(i.reason == "no_evidence" for i in items) / n,
            "passages_mean": (sum(len(i.passages) for i in with_evidence) / len(with_evidence)) if with_evidence else 0.0,
            "judge_items": float(len(results)),
            "judge_failed": float(sum(not r.ok for r in results)),
            "no_signal_judge": sum(i.reason == "judge_failed" for i in items) / n,
            "reward_mean": sum(values) / len(values) if values else 0.0,
            "judge_seconds": judge_seconds,
            "retrieval_seconds": retrieval,
        }
        assert tuple(out) == DIAGNOSTIC_KEYS
        return {k: float(v) for k, v in out.items()}


def _record(item: _Item) -> dict[str, Any]:
    """One line of train/reward_records.jsonl per completion."""
    return {"completion": item.index, "row_id": item.row.get("id"), "response": item.response,
            "passages": len(item.passages or []), "score": item.score, "reward": item.value, "no_signal": item.reason,
            "error": item.error}


__all__ = ["BINARY_RAR_DEFAULTS", "BinaryRARReward", "BinaryRARSettings", "DIAGNOSTIC_KEYS", "response_of"]
