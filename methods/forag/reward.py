"""FoRAG's reward over one generation batch: sentences -> sub-claims -> verdicts -> token rewards.

The services arrive as arguments (the method wires the real ones; tests pass real ones):
- `tokenizer`: the policy tokenizer (token spans of the sentences, harness.core.completions);
- `judge`: the judge client (`ask_many(prompt, items) -> [JudgeResult]`, `check_failed_share`);
- `store`: an evidence store (`for_row(row, query, k)`).

Per step, whatever the batch size, two `ask_many` calls: one DECOMPOSE item per sentence of
every completion whose row has evidence, then one VERIFY item per sub-claim with the row's
top-k passages for that sub-claim (BM25 over the row's `title` articles, docs/BASELINES.md §1.4).

Outcomes per completion (README "Reward"):
- its row has no evidence: None (no signal, docs/BASELINES.md §1.4 "no claim rewards"), counted;
- any judge item of it failed (a split, or a sub-claim's verdict): None (docs/CONTRACTS.md
  "Reward failure rule"), counted as `no_signal_judge`. Dropping only the failed item would
  let a failure raise the return (a lost -1 leaves the +1s), so the whole completion goes;
  its remaining sub-claims are not asked once a split failed;
- no sentence, or every sentence has NO_CLAIMS: zero rewards on every token (nothing was
  claimed, so nothing is rewarded; the KL penalty and the critic still see it), counted;
- otherwise each verified sub-claim is worth `supported` / `unsupported` (the guards may set a
  positive value to 0, or with `positive_cap` a value to `unsupported`, guards.py), aggregated
  per sentence and placed (placement.py).
Above `judge.max_failed_share` of a step's items the step stops (`JudgeFailuresExceeded`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from factrl.harness.core import completions as comp
from factrl.harness.core.answers.reading import AnswerReading, read_answer
from factrl.harness.core.method import RewardOutput

from . import guards
from .placement import place_rewards
from .prompts import DECOMPOSE, VERIFY
from .settings import FoRAGSettings

# Every key is logged at every step (stable metric names, docs/CONTRACTS.md); README lists them.
DIAGNOSTIC_KEYS = (
    "sentences", "subclaims", "subclaims_per_sentence", "subclaims_per_completion", "supported_share",
    "duplicate_subclaims", "guard_clipped", "judge_items", "judge_failed", "decompose_failed", "verify_failed",
    "parse_failures", "no_evidence", "no_claims", "no_signal_judge", "alignment_fallback", "unplaced",
    "rewarded_tokens", "reward_mean", "judge_seconds", "evidence_seconds", "alignment_seconds", "seconds",
)
CONTEXT_SENTENCES = 3  # earlier sentences shown with each sentence to split (pronouns), bounded


def align_completion(tokenizer: Any, ids: Sequence[int], splitter: str) -> comp.Alignment:
    """The core's alignment (docs/PROTOCOL.md §1), except that a completion with neither a think nor an
    answer block is read whole: its text is still what the policy claims."""
    text, spans, used = comp.token_spans(tokenizer, ids)
    sections = comp.find_sections(text) or [comp.Section("text", 0, len(text), False)]
    sentences = comp.sentences_of(text, sections, splitter=splitter)
    sigma, inside, aligned = comp.sigma_from_spans(spans, sentences, sections)
    return comp.Alignment(text, sections, sentences, sigma, spans, used, inside, aligned)


@dataclass
class _Item:
    """One completion on its way through the steps."""

    index: int
    row: Mapping[str, Any]
    n_tokens: int
    evidence: bool = True
    alignment: comp.Alignment | None = None
    # sentence index -> sub-claims (None: that sentence's split failed)
    claims: dict[int, list[str] | None] = field(default_factory=dict)
    # (sentence index, position in its sentence) -> may earn a positive value (guards.py)
    rewarded: dict[tuple[int, int], bool] = field(default_factory=dict)
    duplicates: int = 0  # sub-claims already stated earlier in the completion (guards.normalised)
    clipped: int = 0  # positive values a guard set to 0
    # sentence index -> values of its verified sub-claims
    values: dict[int, list[float]] = field(default_factory=dict)
    failures: int = 0
    fallback: bool = False
    rewards: list[float] | None = None
    status: str = "ok"  # ok | no_evidence | no_claims | judge_failed
    reading: AnswerReading | None = None  # positive_cap: its answer as strict accuracy reads it
    # (sentence index, position) -> positive_cap's mark (guards.capped: None | True stated | False)
    caps: dict[tuple[int, int], bool | None] = field(default_factory=dict)


class FoRAGReward:
    """reward(*, completions, completion_ids, rows, **kwargs) -> RewardOutput (the reward contract, docs/CONTRACTS.md)."""

    name = "forag"

    def __init__(self, *, tokenizer: Any, judge: Any, store: Any, k: int, settings: FoRAGSettings | None = None,
                 decompose_prompt: Any = None, verify_prompt: Any = None):
        if tokenizer is None or judge is None or store is None:
            raise ValueError("FoRAGReward needs the policy tokenizer, a judge and an evidence store")
        self.tokenizer, self.judge, self.store = tokenizer, judge, store
        self.settings = settings if settings is not None else FoRAGSettings.from_mapping()
        self.k = int(self.settings.evidence_k or k)  # k: the evidence group's `k`
        self.decompose_prompt = decompose_prompt or DECOMPOSE
        self.verify_prompt = verify_prompt or VERIFY
        self._has_evidence: dict[str, bool] = {}
        self.__name__ = "forag"

    def _row_has_evidence(self, row: Mapping[str, Any]) -> bool:
        title = str(row.get("title") or "")
        if title not in self._has_evidence:
            self._has_evidence[title] = bool(title.strip()) and bool(
                self.store.for_row(dict(row), str(row.get("question") or ""), 1))
        return self._has_evidence[title]

    # -- the steps ------------------------------------------------------------------------
    def _decompose(self, items: list[_Item]) -> list[Any]:
        asked: list[tuple[_Item, int]] = []
        requests: list[dict] = []
        for item in items:
            if not item.evidence:
                continue
            sentences = item.alignment.sentences  # type: ignore[union-attr]
            for sent in sentences:
                context = [s.text for s in sentences[max(0, sent.index - CONTEXT_SENTENCES):sent.index]]
                asked.append((item, sent.index))
                requests.append({"question": str(item.row.get("question") or ""), "context": context,
                                 "sentence": sent.text})
        results = self.judge.ask_many(self.decompose_prompt, requests) if requests else []
        for (item, index), result in zip(asked, results):
            if result.ok and isinstance(result.value, (list, tuple)):
                item.claims[index] = [str(c) for c in result.value]
            else:
                item.claims[index] = None
                item.failures += 1
        for item in items:
            self._mark_guards(item)
        return results

    def _mark_guards(self, item: _Item) -> None:
        keys = [(index, j) for index in sorted(item.claims) for j in range(len(item.claims[index] or []))]
        marks = guards.mark([item.claims[i][j] for i, j in keys],  # type: ignore[index]
                            dedupe=self.settings.dedupe_statements,
                            max_rewarded=self.settings.max_rewarded_statements)
        item.rewarded = {key: may for key, (_, may) in zip(keys, marks)}
        item.duplicates = sum(duplicate for duplicate, _ in marks)
        item.caps = dict(zip(keys, guards.capped([item.claims[i][j] for i, j in keys], item.reading)))  # type: ignore[index]

    def _verify(self, items: list[_Item]) -> tuple[list[Any], list[dict], float]:
        asked: list[tuple[_Item, int, str]] = []
        requests: list[dict] = []
        started = time.perf_counter()
        for item in items:
            if item.failures:  # a split failed: the completion has no signal whatever the verdicts
                continue
            for index, claims in item.claims.items():
                for j, claim in enumerate(claims or []):
                    passages = self.store.for_row(dict(item.row), claim, self.k)
                    asked.append((item, index, j, claim))
                    requests.append({"claim": claim, "evidence": [p.text for p in passages]})
        evidence_seconds = time.perf_counter() - started
        results = self.judge.ask_many(self.verify_prompt, requests) if requests else []
        records = []
        for (item, index, j, claim), result in zip(asked, results):
            ok = result.ok and isinstance(result.value, bool)
            value = None
            if ok:
                cap = item.caps.get((index, j))
                supported = False if cap else result.value  # the uncredited answer, stated: unsupported
                value, clipped = guards.guarded_value(self.settings.value(supported),
                                                      item.rewarded[index, j] and cap is not False)
                item.clipped += clipped
                item.values.setdefault(index, []).append(value)
            else:
                item.failures += 1
            records.append({"completion": item.index, "row_id": item.row.get("id"), "sentence_index": index,
                            "sentence": item.alignment.sentences[index].text,  # type: ignore[union-attr]
                            "claim": claim, "supported": result.value if ok else None, "value": value,
                            "error": None if ok else str(result.error)})
        return results, records, evidence_seconds

    def _place(self, item: _Item) -> int:
        """Fill item.rewards / status; returns the sentences placed on the final token instead."""
        if not item.evidence:
            item.status = "no_evidence"
            return 0
        if item.failures:  # docs/CONTRACTS.md "Reward failure rule": never a partial value
            item.status = "judge_failed"
            return 0
        if not item.values:  # nothing claimed: a real zero
            item.status = "no_claims"
            item.rewards = [0.0] * item.n_tokens
            return 0
        usable = item.alignment.usable(self.settings.alignment_threshold)  # type: ignore[union-attr]
        item.fallback = not usable and self.settings.placement != "final_token"
        sigma = item.alignment.sigma if usable else None  # type: ignore[union-attr]
        item.rewards, unplaced = place_rewards(item.n_tokens, sigma, item.values, self.settings)
        return unplaced

    # -- the call -------------------------------------------------------------------------
    def __call__(self, *, completions: Sequence[str], completion_ids: Sequence[Sequence[int]],
                 rows: Sequence[Mapping[str, Any]], **kwargs: Any) -> RewardOutput:
        started = time.perf_counter()
        n = len(completions)
        if len(completion_ids) != n or len(rows) != n:
            raise ValueError(f"{n} completions, {len(completion_ids)} completion_ids and {len(rows)} rows: "
                             f"give one row per completion (already repeated per group)")
        t0 = time.perf_counter()
        items = [_Item(b, rows[b], len(completion_ids[b]), evidence=self._row_has_evidence(rows[b]))
                 for b in range(n)]
        if self.settings.positive_cap == "answer":
            for item, completion in zip(items, completions):
                item.reading = read_answer(completion, [str(a) for a in item.row.get("answers") or []],
                                           question=item.row.get("question"))
        evidence_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        for item in items:
            if item.evidence:
                item.alignment = align_completion(self.tokenizer, completion_ids[item.index], self.settings.splitter)
        alignment_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        decomposed = self._decompose(items)
        verified, records, retrieval = self._verify(items)
        judge_seconds = time.perf_counter() - t0 - retrieval
        # Above judge.max_failed_share the run stops here, with the counts (resumable).
        self.judge.check_failed_share([*decomposed, *verified], where="one FoRAG reward step (splits and verdicts)")
        unplaced = sum(self._place(item) for item in items)
        for item in items:
            for index, claims in item.claims.items():
                if claims is None:
                    records.append({"completion": item.index, "row_id": item.row.get("id"), "sentence_index": index,
                                    "sentence": item.alignment.sentences[index].text,  # type: ignore[union-attr]
                                    "claim": None, "supported": None, "value": None, "error": "split failed"})
        diagnostics = self._diagnostics(items, decomposed, verified, unplaced=unplaced,
                                        seconds=(judge_seconds, evidence_seconds + retrieval, alignment_seconds,
                                                 time.perf_counter() - started))
        extras = [{"status": item.status, "fallback": item.fallback} for item in items]
        reasons = [item.status if item.rewards is None else None for item in items]  # no_evidence | judge_failed
        return RewardOutput([item.rewards for item in items], diagnostics, records, extras, no_signal_reasons=reasons)

    def _diagnostics(self, items: list[_Item], decomposed: list[Any], verified: list[Any], *, unplaced: int,
                     seconds: tuple[float, float, float, float]) -> dict[str, float]:
        n = max(len(items), 1)
        split_ok = [c for item in items for c in item.claims.values() if c is not None]
        n_claims = sum(len(c) for c in split_ok)
        # completions whose every split was read (their sub-claims were all asked)
        read = [item for item in items if item.evidence and item.alignment is not None
                and all(c is not None for c in item.claims.values())]
        verdicts = [r.value for r in verified if r.ok and isinstance(r.value, bool)]
        signalled = [item.rewards for item in items if item.rewards is not None]
        failed_d = sum(not r.ok for r in decomposed)
        failed_v = sum(not r.ok for r in verified)
        out = {
            "sentences": float(len(decomposed)),
            "subclaims": float(n_claims),
            "subclaims_per_sentence": n_claims / len(split_ok) if split_ok else 0.0,
            "subclaims_per_completion": (sum(len(c or []) for item in read for c in item.claims.values()) / len(read)
                                         if read else 0.0),
            "supported_share": sum(verdicts) / len(verdicts) if verdicts else 0.0,
            "duplicate_subclaims": float(sum(item.duplicates for item in items)),
            "guard_clipped": float(sum(item.clipped for item in items)),
            "judge_items": float(len(decomposed) + len(verified)),
            "judge_failed": float(failed_d + failed_v),
            "decompose_failed": float(failed_d),
            "verify_failed": float(failed_v),
            "parse_failures": float(sum("unreadable" in str(r.error or "").lower()
                                        for r in [*decomposed, *verified] if not r.ok)),
            "no_evidence": float(sum(item.status == "no_evidence" for item in items)),
            "no_claims": float(sum(item.status == "no_claims" for item in items)),
            "no_signal_judge": sum(item.status == "judge_failed" for item in items) / n,
            "alignment_fallback": float(sum(item.fallback for item in items)),
            "unplaced": float(unplaced),
            "rewarded_tokens": float(sum(1 for r in signalled for x in r if x != 0.0)),
            "reward_mean": sum(sum(r) for r in signalled) / len(signalled) if signalled else 0.0,
            "judge_seconds": seconds[0], "evidence_seconds": seconds[1], "alignment_seconds": seconds[2],
            "seconds": seconds[3],
        }
        assert tuple(out) == DIAGNOSTIC_KEYS
        return {k: float(v) for k, v in out.items()}


__all__ = ["CONTEXT_SENTENCES", "DIAGNOSTIC_KEYS", "FoRAGReward", "align_completion"]
