"""The FSPO reward callable: completions -> per-token returns + factuality masks.

One call scores a whole generation batch (Q questions x G completions):
1. format (docs/BASELINES.md §2.2): exactly one `<think>`, `</think>`, `<answer>`, `</answer>`, in that
   order; a failure scores `format_penalty` (0, as released: the reward is the answer score,
   which is 0 then) and gets mask 0;
2. answer score: 1 when the final answer matches the row's gold or an alias (the harness
   matcher, factrl.harness.core.rewards.judge), else 0;
3. evidence: the row's `;`-joined `title` selects its articles in the evidence store, the
   question ranks their passages (BM25), the top k joined by blank lines are the premise;
   cached per row. No title or nothing found: mask 0, counted;
4. sentences of the reasoning (docs/PROTOCOL.md §1 splitter) with the core's offset alignment
   (harness.core.completions.align; never summed per-sentence token counts, docs/BASELINES.md §9); under
   the alignment threshold: mask 0, counted;
5. one batched NLI call over every distinct (premise, sentence) pair of the batch;
   factual iff score > threshold (strict);
6. sign_flip: token returns = the score (or penalty) broadcast, the mask goes to
   `Method.shape_advantages` through `RewardOutput.extras`; step_reward: the returns carry
   the step values and the mask is informational.
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from factrl.harness.core import completions as comp
from factrl.harness.core.method import RewardOutput
from factrl.harness.core.rewards import gold_answers, judge

from .advantage import factuality_mask, step_returns
from .settings import FSPOSettings

_TAGS = ("<think>", "</think>", "<answer>", "</answer>")
_TAG = re.compile(r"</?(?:think|answer)>", re.IGNORECASE)
PREMISE_JOIN = "\n\n"


def format_ok(text: str) -> bool:
    """One each of <think>, </think>, <answer>, </answer>, in that order (case-insensitive, as
    the harness reads tags), with nothing but text between them."""
    return [t.group(0).lower() for t in _TAG.finditer(text or "")] == list(_TAGS)


@dataclass
class Premise:
    text: str | None  # None: no step signal for this row
    status: str  # "ok", "no_title" or "no_evidence"
    passages: int = 0


class FSPOReward:
    """reward(*, prompts, completions, completion_ids, rows, **kwargs) -> RewardOutput."""

    def __init__(self, *, tokenizer: Any, nli: Any, store: Any, k: int, settings: FSPOSettings | None = None,
                 prefix: str = "", train: Mapping[str, Any] | None = None):
        if tokenizer is None or nli is None or store is None:
            raise ValueError("FSPOReward needs the policy tokenizer, an NLI scorer and an evidence store")
        self.tokenizer, self.nli, self.store = tokenizer, nli, store
        self.settings = settings if settings is not None else FSPOSettings.from_mapping()
        self.k = int(self.settings.evidence_k or k)  # k: the evidence group's `k`
        # The train.* values the settings component records (group size, lr, beta, ...).
        self.train = dict(train or {})
        # The response prefix the prompt already holds (e.g. "<think>"): the format rule reads
        # the response as the policy wrote it, prefix included.
        self.prefix = prefix or ""
        self._premises: dict[tuple, Premise] = {}
        self.totals = {"no_title": 0, "no_evidence": 0, "format_failures": 0, "completions": 0}
        self.__name__ = "fspo"

    # -- evidence ---------------------------------------------------------------------------
    def premise(self, row: Mapping[str, Any]) -> Premise:
        """The NLI premise of one pool row (cached: G completions share it, and steps repeat rows)."""
        key = (row.get("id"), str(row.get("title") or ""), str(row.get("question") or ""))
        if key not in self._premises:
            from factrl.harness.services.evidence import split_titles

            if not split_titles(row.get("title")):
                found = Premise(None, "no_title")
            else:
                query = str(row.get("question") or "") if self.settings.evidence_query == "question" else ""
                passages = self.store.for_row(dict(row), query, self.k)
                texts = [p.text.strip() for p in passages if p.text.strip()]
                found = (Premise(PREMISE_JOIN.join(texts), "ok", len(texts)) if texts
                         else Premise(None, "no_evidence"))
            self._premises[key] = found
        return self._premises[key]

    # -- the call ---------------------------------------------------------------------------
    def __call__(self, *, prompts: Sequence[str] | None = None, completions: Sequence[str],
                 completion_ids: Sequence[Sequence[int]], rows: Sequence[Mapping[str, Any]],
                 **kwargs: Any) -> RewardOutput:
        started = time.perf_counter()
        n = len(completions)
        if len(completion_ids) != n or len(rows) != n:
            raise ValueError(f"{n} completions, {len(completion_ids)} completion_ids and {len(rows)} rows: "
                             f"give one of each per completion")
        s = self.settings
        fmt = [format_ok(self.prefix + (c or "")) for c in completions]
        correct = [judge(c, gold_answers(r), s.correctness, r.get("question"))[0] for c, r in zip(completions, rows)]
        t0 = time.perf_counter()
        premises = [self.premise(r) for r in rows]
        evidence_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        aligned: list[comp.Alignment | None] = [None] * n
        status = ["format" if not fmt[b] else premises[b].status for b in range(n)]
        for b in range(n):
            if status[b] == "ok":
                aligned[b] = comp.align(self.tokenizer, completion_ids[b], splitter=s.splitter)
                if not aligned[b].usable(s.alignment_threshold):
                    status[b] = "alignment"
        align_seconds = time.perf_counter() - t0
        # Every reasoning sentence of every completion with a step signal, in one NLI call.
        owners = [(b, sent) for b in range(n) if status[b] == "ok"
                  for sent in aligned[b].sentences if sent.section == "think"]  # type: ignore[union-attr]
        pairs = [(premises[b].text, sent.text) for b, sent in owners]
        unique = list(dict.fromkeys(pairs))
        t0 = time.perf_counter()
        scored = dict(zip(unique, self.nli.score(unique))) if unique else {}
        nli_seconds = time.perf_counter() - t0
        scores = [float(scored[p]) for p in pairs]
        signs: list[dict[int, int]] = [{} for _ in range(n)]
        steps: list[dict[int, int]] = [{} for _ in range(n)]
        for (b, sent), score in zip(owners, scores):
            signs[b][sent.index] = 1 if score > s.threshold else -1
            steps[b][sent.index] = s.step(score)
        base = [(1.0 if correct[b] else 0.0) if fmt[b] else s.format_penalty for b in range(n)]
        returns, masks = [], []
        for b in range(n):
            length = len(completion_ids[b])
            ok = status[b] == "ok"
            masks.append(factuality_mask(aligned[b].sigma, signs[b]) if ok else [0] * length)  # type: ignore
            if s.variant == "step_reward" and ok:
                returns.append(step_returns(aligned[b].sigma, base[b], steps[b], s.step_weight))  # type: ignore
            else:
                returns.append([float(base[b])] * length)
        evidence = [p.status for p in premises]  # counted whatever the format: a row's own property
        self._count(status, evidence)
        diagnostics = self._diagnostics(fmt, correct, status, evidence, scores, masks, base, n)
        diagnostics.update(nli_calls=float(bool(unique)), nli_pairs=float(len(unique)), nli_seconds=nli_seconds,
                           evidence_seconds=evidence_seconds, alignment_seconds=align_seconds,
                           seconds=time.perf_counter() - started)
        records = [{"completion": b, "row_id": rows[b].get("id"), "sentence_index": sent.index,
                    "sentence": sent.text, "tokens": sum(1 for x in aligned[b].sigma if x == sent.index),
                    "score": round(score, 6), "factual": score > s.threshold, "step_value": steps[b][sent.index],
                    "answer_correct": bool(correct[b])}
                   for (b, sent), score in zip(owners, scores)]
        extras = [{"mask": masks[b], "status": status[b], "answer_score": 1.0 if correct[b] else 0.0,
                   "format_ok": fmt[b]} for b in range(n)]
        return RewardOutput(token_returns=returns, diagnostics=diagnostics, records=records, extras=extras)

    def _count(self, status: list[str], evidence: list[str]) -> None:
        self.totals["completions"] += len(status)
        self.totals["no_title"] += evidence.count("no_title")
        self.totals["no_evidence"] += evidence.count("no_evidence")
        self.totals["format_failures"] += status.count("format")

    def _diagnostics(self, fmt: list[bool], correct: list[bool], status: list[str], evidence: list[str],
                     scores: list[float], masks: list[list[int]], base: list[float], n: int) -> dict[str, float]:
        denom = max(n, 1)
        marked = [m for mask in masks for m in mask if m != 0]
        return {
            "factual_rate": (sum(x > self.settings.threshold for x in scores) / len(scores)) if scores else 0.0,
            "correct_rate": sum(correct) / denom,
            "format_rate": sum(fmt) / denom,
            "format_failures": float(fmt.count(False)),
            "no_title": float(evidence.count("no_title")),
            "no_evidence": float(evidence.count("no_evidence")),
            "alignment_fallback": float(status.count("alignment")),
            "step_signal_rate": status.count("ok") / denom,
            "sentences": float(len(scores)),
            "nli_score_mean": sum(scores) / len(scores) if scores else 0.0,
            "negative_token_share": sum(m < 0 for m in marked) / len(marked) if marked else 0.0,
            "reward_mean": sum(base) / denom,
        }

    def close(self) -> None:
        """Close the store and log the run's totals of completions without a step signal."""
        t = self.totals
        if t["completions"]:
            logging.getLogger("factrl.methods.fspo").info(
                "fspo: %d completions scored; no title %d, no evidence %d, format failures %d",
                t["completions"], t["no_title"], t["no_evidence"], t["format_failures"])
        if hasattr(self.store, "close"):
            self.store.close()


__all__ = ["FSPOReward", "PREMISE_JOIN", "Premise", "format_ok"]
