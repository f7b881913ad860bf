"""RLFH's reward over one generation batch: per-token rewards for the PPO engine.

One call (Q x C completions):
1. align every completion to its tokens and sentences (alignment.py); a row with no evidence
   (no title, or none of its titles in the store) or a completion under `alignment_threshold`
   gets no signal (`None`, counted) and costs no judge call;
2. EXTRACT once per completion on the judged response (placement.judged_text): echoed
   sentences with their atomic statements; unreadable replies are asked again up to `tries`
   requests, extraction's temperature raised by 0.25 each time (annotate.py:235-246);
3. RLFH's hedge filter on the echoes (settings.is_hedge, reward.py:252-271); every kept echo is
   located in the response (placement.locate); one the response does not hold makes the
   completion no-signal (`unmatched_echo`);
4. VERIFY (materials: retrieval.py) and ASSESS once per kept statement, batched;
5. rewards from the labels (scoring.py), per granularity, with the guards (`answer_gate` reads
   the completion's answer block and the row's golds). `token_returns[b][t]`
   is token t's reward (docs/CONTRACTS.md, "PPO engine"): the engine clips it, adds the KL, runs GAE.

Judge failures (docs/CONTRACTS.md "Reward failure rule"): with `judge_failure: no_signal` (the
default) any failed judge item of a completion - its extraction, one verdict or one score -
makes the completion no-signal, counted (`judge_failed`, `no_signal_judge`); `released` scores a
failed verdict Vague, a failed score 1 and a failed extraction as no statements, as the remote
path of the release does (annotate.py:222,232,235), counted as `fallback_items`. That fallback
can raise a return (methods/rlfh/README.md, "Fidelity"). Above `judge.max_failed_share` of a
step's judge items the run stops, resumably (`JudgeFailuresExceeded`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from factrl.harness.core import completions as comp
from factrl.harness.core.method import RewardOutput

from . import placement, scoring
from .alignment import align_response
from .prompts import hotter, prompts_for
from .retrieval import Retriever
from .settings import RLFHSettings, is_hedge

# Logged at every step as rewards/rlfh/<key> (README "Logged metric keys").
DIAGNOSTIC_KEYS = (
    "completions", "alignment_fallback", "no_evidence", "empty_response", "echoes", "hedged_echoes",
    "unmatched_echo", "statements", "statements_per_completion", "unplaced_statements", "gold_shown_share",
    "correct_rate", "vague_rate", "wrong_rate", "score_mean", "truth_reward_mean", "info_reward_mean",
    "reward_sum_mean", "judge_items", "judge_failed", "extract_failed", "verify_failed", "assess_failed",
    "parse_failures", "retried_items", "fallback_items", "no_signal_judge", "duplicate_statements", "guard_clipped",
    "answer_gated",
    "judge_seconds", "evidence_seconds", "seconds",
)
NO_SIGNAL = ("no_evidence", "alignment", "unmatched_echo", "judge_failed")


@dataclass
class _Completion:
    index: int
    row: Mapping[str, Any]
    ids_length: int
    alignment: comp.Alignment | None = None
    judged: placement.Judged | None = None
    status: str = "ok"  # ok | no_evidence | alignment | empty_response | unmatched_echo | judge_failed
    echoes: list[scoring.Echo] = field(default_factory=list)
    error: str | None = None
    materials: dict[int, bool] = field(default_factory=dict)  # id(statement) -> gold sentence shown

    @property
    def statements(self) -> list[scoring.Statement]:
        return [st for e in self.echoes if not e.hedged for st in e.statements]


def _unreadable(result: Any) -> bool:
    return not result.ok and str(result.error or "").lower().startswith("unreadable")


def _final_answer(alignment: comp.Alignment) -> str | None:
    block = next((s for s in alignment.sections if s.name == "answer"), None)
    return alignment.text[block.start:block.end].strip() if block is not None else None


class RLFHReward:
    """reward(*, completions, completion_ids, rows, **kwargs) -> RewardOutput (per-token rewards)."""

    name = "rlfh"

    def __init__(self, *, tokenizer: Any, judge: Any, store: Any, settings: RLFHSettings | None = None,
                 prefix: str = ""):
        if tokenizer is None or judge is None or store is None:
            raise ValueError("RLFHReward needs the policy tokenizer, a judge and an evidence store")
        self.tokenizer, self.judge, self.store = tokenizer, judge, store
        self.settings = settings if settings is not None else RLFHSettings.from_mapping()
        s = self.settings
        self.prompts = prompts_for(s.parser, s.decoding)
        self.retriever = Retriever(store, max_secs=s.max_secs, max_words_per_sec=s.max_words_per_sec,
                                   gold_material=s.gold_material)
        # The response prefix the prompt already holds (e.g. "<think>"): alignment.py
        self.prefix = prefix or ""
        self._prefix_ids = list(tokenizer(self.prefix, add_special_tokens=False)["input_ids"]) if self.prefix else []
        self._has_evidence: dict[str, bool] = {}
        self.__name__ = "rlfh"

    def row_has_evidence(self, row: Mapping[str, Any]) -> bool:
        title = str(row.get("title") or "")
        if title not in self._has_evidence:
            self._has_evidence[title] = bool(title.strip()) and bool(self.store.by_title(title, k=1))
        return self._has_evidence[title]

    def materials(self, row: Mapping[str, Any], statement: str) -> list[str]:
        return self.retriever.materials(row, statement)

    # -- judge calls with the release's tries ---------------------------------------------------
    def _ask(self, prompt: Any, items: list[dict], counts: dict[str, int]) -> list[Any]:
        if not items:
            return []
        results = list(self.judge.ask_many(prompt, items))
        pending = [i for i, r in enumerate(results) if _unreadable(r)]
        counts["parse_failures"] += len(pending)
        for _ in range(self.settings.tries - 1):
            if not pending:
                break
            prompt = hotter(prompt)  # extraction: T + 0.25 per try; verify / assess: unchanged
            again = self.judge.ask_many(prompt, [items[i] for i in pending])
            counts["retried_items"] += len(pending)
            for i, result in zip(pending, again):
                results[i] = result
            pending = [i for i, r in zip(pending, again) if _unreadable(r)]
            counts["parse_failures"] += len(pending)
        return results

    # -- the steps --------------------------------------------------------------------------
    def _prepare(self, completion_ids: Sequence[Sequence[int]], rows: Sequence[Mapping[str, Any]]) -> list[_Completion]:
        items = []
        for b, (ids, row) in enumerate(zip(completion_ids, rows)):
            item = _Completion(b, row, len(ids))
            items.append(item)
            if not self.row_has_evidence(row):
                item.status = "no_evidence"
                continue
            item.alignment = align_response(self.tokenizer, ids, prefix_ids=self._prefix_ids,
                                            splitter=self.settings.splitter)
            if not item.alignment.usable(self.settings.alignment_threshold):
                item.status = "alignment"
                continue
            item.judged = placement.judged_text(item.alignment)
            if not any(ch.isalnum() for ch in item.judged.text):
                item.status = "empty_response"  # nothing to judge: a real all-zero reward, no call
        return items

    def _extract(self, items: list[_Completion], counts: dict[str, int]) -> list[Any]:
        asked = [i for i in items if i.status == "ok"]
        results = self._ask(self.prompts[0], [{"response": i.judged.text} for i in asked], counts)
        s = self.settings
        for item, result in zip(asked, results):
            if not result.ok:
                if s.judge_failure == "no_signal":
                    item.status, item.error = "judge_failed", f"extract: {result.error}"
                else:
                    counts["fallback_items"] += 1  # the release's {}: no statements
                continue
            for echo_text, texts in result.value:
                echo = scoring.Echo(echo_text, [scoring.Statement(t) for t in texts],
                                    hedged=s.drop_hedges and is_hedge(echo_text))
                item.echoes.append(echo)
                if echo.hedged or not echo.statements:
                    continue
                if not scoring.place(echo, item.judged, item.alignment, s.echo_min_share):
                    item.status, item.error = "unmatched_echo", f"the response holds no run of {echo_text[:60]!r}"
                    break
        return results

    def _judge_statements(self, items: list[_Completion], counts: dict[str, int]) -> tuple[list, list, float]:
        pairs = [(item, st) for item in items if item.status == "ok" for st in item.statements]
        started = time.perf_counter()
        verify_items = []
        for item, st in pairs:
            materials = self.materials(item.row, st.text)
            item.materials[id(st)] = any(m == self.retriever.index(item.row).gold for m in materials)
            verify_items.append({"materials": materials, "statement": st.text})
        evidence_seconds = time.perf_counter() - started
        assess_items = [{"question": str(item.row.get("question", "")), "response": item.judged.text,
                         "statement": st.text, "answer": _final_answer(item.alignment)} for item, st in pairs]
        verdicts = self._ask(self.prompts[1], verify_items, counts)
        scores = self._ask(self.prompts[2], assess_items, counts)
        released = self.settings.judge_failure == "released"
        for (item, st), verdict, score in zip(pairs, verdicts, scores):
            st.verdict = verdict.value if verdict.ok else ("vague" if released else None)
            st.score = score.value if score.ok else (1 if released else None)
            st.fallback = released and not (verdict.ok and score.ok)
            counts["fallback_items"] += released * ((not verdict.ok) + (not score.ok))
            if not released and not (verdict.ok and score.ok) and item.status == "ok":
                failed = "verify" if not verdict.ok else "assess"
                error = verdict.error if not verdict.ok else score.error
                item.status, item.error = "judge_failed", f"{failed}: {error}"
        return verdicts, scores, evidence_seconds

    # -- the call ---------------------------------------------------------------------------
    def __call__(self, *, completions: Sequence[str], completion_ids: Sequence[Sequence[int]],
                 rows: Sequence[Mapping[str, Any]], **kwargs: Any) -> RewardOutput:
        started = time.perf_counter()
        if not (len(completions) == len(completion_ids) == len(rows)):
            raise ValueError(f"{len(completions)} completions, {len(completion_ids)} completion_ids and "
                             f"{len(rows)} rows: give one row per completion (already repeated per group)")
        counts = {"parse_failures": 0, "retried_items": 0, "fallback_items": 0}
        items = self._prepare(completion_ids, rows)
        t0 = time.perf_counter()
        extracted = self._extract(items, counts)
        verdicts, scores, evidence_seconds = self._judge_statements(items, counts)
        judge_seconds = time.perf_counter() - t0 - evidence_seconds
        results = [*extracted, *verdicts, *scores]
        # Above judge.max_failed_share the run stops here, with the counts (resumable).
        self.judge.check_failed_share(results, where="one RLFH reward step (extract, verify, assess)")
        s = self.settings
        returns: list[list[float] | None] = []
        infos, sums = [], []
        clipped = gated = 0
        for item, completion in zip(items, completions):
            if item.status in NO_SIGNAL:
                returns.append(None)
                continue
            reads = s.answer_gate == "strict" or s.positive_cap == "answer" or s.answer_once
            answer = scoring.read_answer(completion, item.row.get("answers") or [], question=item.row.get("question")) \
                if reads else None
            outcome = scoring.score(item.echoes, item.alignment.spans if item.alignment else [], item.ids_length,
                                    s.table, granularity=s.granularity, dedupe=s.dedupe_statements,
                                    max_rewarded=s.max_rewarded_statements,
                                    gate=answer if s.answer_gate == "strict" else None,
                                    cap=answer if s.positive_cap == "answer" else None,
                                    once=answer if s.answer_once else None)
            returns.append(outcome.rewards)
            infos += outcome.infos
            clipped += outcome.clipped
            gated += outcome.gated
            sums.append(sum(outcome.rewards))
        counts["answer_gated"] = gated
        diagnostics = self._diagnostics(items, results, extracted, verdicts, scores, infos, sums, clipped, counts,
                                        seconds=(judge_seconds, evidence_seconds, time.perf_counter() - started))
        reasons = [item.status if item.status in NO_SIGNAL else None for item in items]
        return RewardOutput(returns, diagnostics, _records(items), no_signal_reasons=reasons)

    def _diagnostics(self, items, results, extracted, verdicts, scores, infos, sums, clipped, counts, *,
                     seconds) -> dict[str, float]:
        n = max(len(items), 1)
        status = [i.status for i in items]
        scored = [i for i in items if i.status not in NO_SIGNAL and i.alignment is not None]
        statements = [st for i in scored for st in i.statements]
        judged = [st for i in items for st in i.statements if st.verdict is not None]
        rated = [st for i in items for st in i.statements if st.score is not None]
        truths = [st.truth for st in statements if st.truth is not None]
        shown = [flag for i in items for flag in i.materials.values()]
        echoes = [e for i in items for e in i.echoes]
        extract_failed = sum(not r.ok for r in extracted)
        out = {
            "completions": float(len(items)),
            "alignment_fallback": float(status.count("alignment")),
            "no_evidence": float(status.count("no_evidence")),
            "empty_response": float(status.count("empty_response")),
            "echoes": float(len(echoes)),
            "hedged_echoes": float(sum(e.hedged for e in echoes)),
            "unmatched_echo": float(status.count("unmatched_echo")),
            "statements": float(len(statements)),
            "statements_per_completion": len(statements) / len(scored) if scored else 0.0,
            "unplaced_statements": float(sum(st.char is None for st in statements)),
            "gold_shown_share": sum(shown) / len(shown) if shown else 0.0,
            "correct_rate": sum(st.verdict == "correct" for st in judged) / len(judged) if judged else 0.0,
            "vague_rate": sum(st.verdict == "vague" for st in judged) / len(judged) if judged else 0.0,
            "wrong_rate": sum(st.verdict == "wrong" for st in judged) / len(judged) if judged else 0.0,
            "score_mean": sum(st.score for st in rated) / len(rated) if rated else 0.0,
            "truth_reward_mean": sum(truths) / len(truths) if truths else 0.0,
            "info_reward_mean": sum(infos) / len(infos) if infos else 0.0,
            "reward_sum_mean": sum(sums) / len(sums) if sums else 0.0,
            "judge_items": float(len(results)),
            "judge_failed": float(sum(not r.ok for r in results)),
            "extract_failed": float(extract_failed),
            "verify_failed": float(sum(not r.ok for r in verdicts)),
            "assess_failed": float(sum(not r.ok for r in scores)),
            "parse_failures": float(counts["parse_failures"]),
            "retried_items": float(counts["retried_items"]),
            "fallback_items": float(counts["fallback_items"]),
            "no_signal_judge": status.count("judge_failed") / n,
            "duplicate_statements": float(sum(st.duplicate for st in statements)),
            "guard_clipped": float(clipped),
            "answer_gated": float(counts["answer_gated"]),
            "judge_seconds": seconds[0], "evidence_seconds": seconds[1], "seconds": seconds[2],
        }
        assert tuple(out) == DIAGNOSTIC_KEYS
        return {k: float(v) for k, v in out.items()}


def _records(items: list[_Completion]) -> list[dict[str, Any]]:
    """train/reward_records.jsonl: one line per statement, one per completion without any."""
    out: list[dict[str, Any]] = []
    for item in items:
        base = {"completion": item.index, "row_id": item.row.get("id"), "status": item.status}
        rows = [(e, st) for e in item.echoes for st in e.statements]
        if not rows:
            out.append({**base, "error": item.error})
        for echo, st in rows:
            out.append({**base, "echo": echo.text, "hedged": echo.hedged, "sentence_index": echo.sentence,
                        "statement": st.text, "verdict": st.verdict, "score": st.score, "fallback": st.fallback,
                        "token": st.token, "info_token": echo.token, "truth": st.truth, "info": echo.info,
                        "duplicate": st.duplicate, "rewarded": st.rewarded, "gated": st.gated, "error": item.error})
    return out


__all__ = ["DIAGNOSTIC_KEYS", "RLFHReward"]
