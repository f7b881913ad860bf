"""RLFH's reward over one generation batch: per-token rewards for the PPO engine.

One call (Q x C completions) does, in order:
1. align every completion to its sentences (the core's offsets and PROTOCOL 1 splitter, with
   the response prefix put back and untagged text read whole: alignment.py); under
   `alignment_threshold`, or when the row has no evidence (no title, or none of its titles
   in the store; BASELINES 1.4), the completion gets no signal (`None`, counted);
2. drop refusal / hedge sentences and questions (case-insensitive), then one `ask_many` with
   every completion's numbered sentences -> atomic statements per sentence (EXTRACT);
3. evidence per statement: the row's article passages ranked by the statement (BM25, the
   store's FTS5 index, built once; RLFH rebuilt BM25 per statement), top `evidence_k`, plus
   RLFH's gold sentence; then one `ask_many` over all statements for the verdict (VERIFY) and
   one for informativeness (ASSESS), each concurrent inside the judge client;
4. rewards (settings.py): truth(statement) = w_t V |I| on the statement's token, info(sentence)
   = w_i ln(max(eps, sum I) + mu) on the sentence's last token (placement.py); every other
   token 0. For `algorithm: ppo`, `token_returns[b][t]` is token t's reward (CONTRACTS, "PPO
   engine"): the engine adds the KL penalty, clips and runs GAE.

Judge failures are counted and never scored (no RLFH fallback to Vague or 1): a completion
whose extraction failed, or that names a sentence it was not shown, has no signal; a
statement whose verdict or score failed earns no truth reward, and a sentence with any
failed score earns no info reward. Above `judge.max_failed_share` of a step's judge items the
run stops, resumably (`JudgeFailuresExceeded`).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from factrl.harness import completions as comp
from factrl.harness.method import RewardOutput

from . import placement
from .alignment import align_response
from .prompts import ASSESS, EXTRACT, VERIFY
from .settings import RLFHSettings, is_hedge

# Logged at every step as rewards/rlfh/<key> (README "Logged metric keys").
DIAGNOSTIC_KEYS = (
    "completions", "alignment_fallback", "no_evidence", "no_sentences", "dropped_sentences", "sentences_asked",
    "statements", "statements_per_completion", "located_share", "correct_rate", "vague_rate", "wrong_rate",
    "score_mean", "truth_reward_mean", "info_reward_mean", "reward_sum_mean", "judge_items", "judge_failed",
    "extract_failed", "unknown_sentence", "verify_failed", "assess_failed", "parse_failures", "info_skipped",
    "no_signal_judge", "judge_seconds", "evidence_seconds", "seconds",
)


@dataclass
class _Statement:
    completion: int
    sentence: comp.Sentence
    text: str
    verdict: str | None = None
    score: int | None = None
    token: int | None = None
    located: bool = False
    truth: float | None = None


@dataclass
class _Completion:
    index: int
    row: Mapping[str, Any]
    alignment: comp.Alignment | None = None
    status: str = "ok"  # ok | alignment | no_evidence | no_sentences | extract_failed | unknown_sentence
    asked: list[comp.Sentence] = field(default_factory=list)
    dropped: int = 0
    statements: list[_Statement] = field(default_factory=list)
    error: str | None = None


def _unreadable(result: Any) -> bool:
    return "unreadable" in str(result.error or "").lower()


class RLFHReward:
    """reward(*, completions, completion_ids, rows, **kwargs) -> RewardOutput (per-token rewards)."""

    name = "rlfh"

    def __init__(self, *, tokenizer: Any, judge: Any, store: Any, settings: RLFHSettings | None = None,
                 prefix: str = ""):
        if tokenizer is None or judge is None or store is None:
            raise ValueError("RLFHReward needs the policy tokenizer, a judge and an evidence store")
        self.tokenizer, self.judge, self.store = tokenizer, judge, store
        self.settings = settings if settings is not None else RLFHSettings.from_mapping()
        self.prompts = (EXTRACT, VERIFY, ASSESS)
        # The response prefix the prompt already holds (e.g. "<think>"): alignment.py
        self.prefix = prefix or ""
        self._prefix_ids = list(tokenizer(self.prefix, add_special_tokens=False)["input_ids"]) if self.prefix else []
        self._has_evidence: dict[str, bool] = {}
        self.__name__ = "rlfh"

    # -- evidence ---------------------------------------------------------------------------
    def row_has_evidence(self, row: Mapping[str, Any]) -> bool:
        title = str(row.get("title") or "")
        if title not in self._has_evidence:
            self._has_evidence[title] = bool(title.strip()) and bool(self.store.by_title(title, k=1))
        return self._has_evidence[title]

    def materials(self, row: Mapping[str, Any], statement: str) -> list[str]:
        texts = [p.text.strip() for p in self.store.for_row(dict(row), statement, self.settings.evidence_k)]
        texts = [t for t in texts if t]
        answers = row.get("answers") or []
        answer = answers if isinstance(answers, str) else (answers[0] if answers else None)
        if self.settings.gold_material and answer:
            texts.append(f'The correct answer for "{str(row.get("question", "")).strip()}" is "{answer}".')
        return texts

    # -- the steps --------------------------------------------------------------------------
    def _prepare(self, completion_ids: Sequence[Sequence[int]], rows: Sequence[Mapping[str, Any]]
                 ) -> list[_Completion]:
        s = self.settings
        items = []
        for b, (ids, row) in enumerate(zip(completion_ids, rows)):
            item = _Completion(b, row)
            items.append(item)
            if not self.row_has_evidence(row):
                item.status = "no_evidence"
                continue
            item.alignment = align_response(self.tokenizer, ids, prefix_ids=self._prefix_ids, splitter=s.splitter)
            if not item.alignment.usable(s.alignment_threshold):
                item.status = "alignment"
                continue
            for sentence in item.alignment.sentences:
                if s.drop_hedges and is_hedge(sentence.text):
                    item.dropped += 1
                else:
                    item.asked.append(sentence)
            if not item.asked:
                item.status = "no_sentences"  # nothing to judge: a real all-zero reward
        return items

    def _extract(self, items: list[_Completion]) -> list[Any]:
        asked = [i for i in items if i.status == "ok"]
        if not asked:
            return []
        results = self.judge.ask_many(EXTRACT, [
            {"question": str(i.row.get("question", "")), "response": i.alignment.text,
             "sentences": [[sent.index, sent.text] for sent in i.asked]} for i in asked])
        for item, result in zip(asked, results):
            if not result.ok:
                item.status, item.error = "extract_failed", f"extract: {result.error}"
                continue
            by_index = {sent.index: sent for sent in item.asked}
            unknown = [k for k, _ in result.value if k not in by_index]
            if unknown:  # the judge named a sentence it was not shown: never clamped to one
                item.status, item.error = "unknown_sentence", f"extract: sentence {unknown[0]} was not asked about"
                continue
            item.statements = [_Statement(item.index, by_index[k], text) for k, texts in result.value for text in texts]
        return results

    def _judge_statements(self, statements: list[_Statement], items: list[_Completion]) -> tuple[list, list, float]:
        if not statements:
            return [], [], 0.0
        started = time.perf_counter()
        materials = [self.materials(items[st.completion].row, st.text) for st in statements]
        evidence_seconds = time.perf_counter() - started
        # A statement without materials (only possible with gold_material off) gets no verdict.
        checked = [(st, m) for st, m in zip(statements, materials) if m]
        verdicts = self.judge.ask_many(VERIFY, [{"materials": m, "statement": st.text} for st, m in checked]) \
            if checked else []
        scores = self.judge.ask_many(ASSESS, [
            {"question": str(items[st.completion].row.get("question", "")),
             "response": items[st.completion].alignment.text, "statement": st.text} for st in statements])
        for (st, _), verdict in zip(checked, verdicts):
            st.verdict = verdict.value if verdict.ok else None
        for st, score in zip(statements, scores):
            st.score = score.value if score.ok else None
        return verdicts, scores, evidence_seconds

    def _place(self, item: _Completion, length: int) -> tuple[list[float], list[float], int]:
        """Token rewards of one completion; also its info rewards and skipped sentences."""
        table, s = self.settings.table, self.settings
        rewards = [0.0] * length
        for st in item.statements:
            located = placement.statement_token(item.alignment, st.sentence, st.text, granularity=s.granularity)
            if located is None:
                continue
            st.token, st.located = located
            if st.verdict is not None and st.score is not None:
                st.truth = table.w_truth * table.verdict[st.verdict] * abs(table.info[st.score])
                rewards[st.token] += st.truth
        infos, skipped = [], 0
        for index in dict.fromkeys(st.sentence.index for st in item.statements):
            mine = [st for st in item.statements if st.sentence.index == index]
            bounds = placement.sentence_tokens(item.alignment.sigma, index)
            if bounds is None:
                continue
            if any(st.score is None for st in mine):
                skipped += 1  # a made-up sum would be a guessed value: no info reward
                continue
            total = sum(table.info[st.score] for st in mine)
            info = table.w_info * math.log(max(table.eps, total) + table.mu)
            rewards[bounds[1]] += info
            infos.append(info)
        return rewards, infos, skipped

    # -- the call ---------------------------------------------------------------------------
    def __call__(self, *, completions: Sequence[str], completion_ids: Sequence[Sequence[int]],
                 rows: Sequence[Mapping[str, Any]], **kwargs: Any) -> RewardOutput:
        started = time.perf_counter()
        if not (len(completions) == len(completion_ids) == len(rows)):
            raise ValueError(f"{len(completions)} completions, {len(completion_ids)} completion_ids and "
                             f"{len(rows)} rows: give one row per completion (already repeated per group)")
        items = self._prepare(completion_ids, rows)
        t0 = time.perf_counter()
        extracted = self._extract(items)
        statements = [st for item in items if item.status == "ok" for st in item.statements]
        verdicts, scores, evidence_seconds = self._judge_statements(statements, items)
        judge_seconds = time.perf_counter() - t0 - evidence_seconds
        results = [*extracted, *verdicts, *scores]
        # Above judge.max_failed_share the run stops here, with the counts (resumable).
        self.judge.check_failed_share(results, where="one RLFH reward step (extract, verify, assess)")
        returns: list[list[float] | None] = []
        infos: list[float] = []
        sums: list[float] = []
        skipped = 0
        for item, ids in zip(items, completion_ids):
            if item.status == "no_sentences":
                returns.append([0.0] * len(ids))
                sums.append(0.0)
            elif item.status != "ok":
                returns.append(None)
            else:
                rewards, info, skip = self._place(item, len(ids))
                returns.append(rewards)
                infos += info
                skipped += skip
                sums.append(sum(rewards))
        diagnostics = self._diagnostics(items, statements, results, extracted, verdicts, scores, infos, sums,
                                        skipped, seconds=(judge_seconds, evidence_seconds,
                                                          time.perf_counter() - started))
        return RewardOutput(returns, diagnostics, _records(items))

    def _diagnostics(self, items, statements, results, extracted, verdicts, scores, infos, sums, skipped, *,
                     seconds) -> dict[str, float]:
        n = max(len(items), 1)
        status = [i.status for i in items]
        judged = [st for st in statements if st.verdict is not None]
        scored = [st for st in statements if st.score is not None]
        truths = [st.truth for st in statements if st.truth is not None]
        extract_ok = [i for i in items if i.status == "ok"]  # extraction read (possibly no statements)
        out = {
            "completions": float(len(items)),
            "alignment_fallback": float(status.count("alignment")),
            "no_evidence": float(status.count("no_evidence")),
            "no_sentences": float(status.count("no_sentences")),
            "dropped_sentences": float(sum(i.dropped for i in items)),
            "sentences_asked": float(sum(len(i.asked) for i in items if i.status not in ("alignment", "no_evidence"))),
            "statements": float(len(statements)),
            "statements_per_completion": len(statements) / len(extract_ok) if extract_ok else 0.0,
            "located_share": sum(st.located for st in statements) / len(statements) if statements else 0.0,
            "correct_rate": sum(st.verdict == "correct" for st in judged) / len(judged) if judged else 0.0,
            "vague_rate": sum(st.verdict == "vague" for st in judged) / len(judged) if judged else 0.0,
            "wrong_rate": sum(st.verdict == "wrong" for st in judged) / len(judged) if judged else 0.0,
            "score_mean": sum(st.score for st in scored) / len(scored) if scored else 0.0,
            "truth_reward_mean": sum(truths) / len(truths) if truths else 0.0,
            "info_reward_mean": sum(infos) / len(infos) if infos else 0.0,
            "reward_sum_mean": sum(sums) / len(sums) if sums else 0.0,
            "judge_items": float(len(results)),
            "judge_failed": float(sum(not r.ok for r in results)),
            "extract_failed": float(status.count("extract_failed")),
            "unknown_sentence": float(status.count("unknown_sentence")),
            "verify_failed": float(sum(not r.ok for r in verdicts)),
            "assess_failed": float(sum(not r.ok for r in scores)),
            "parse_failures": float(sum(_unreadable(r) for r in results if not r.ok)),
            "info_skipped": float(skipped),
            "no_signal_judge": (status.count("extract_failed") + status.count("unknown_sentence")) / n,
            "judge_seconds": seconds[0], "evidence_seconds": seconds[1], "seconds": seconds[2],
        }
        assert tuple(out) == DIAGNOSTIC_KEYS
        return {k: float(v) for k, v in out.items()}


def _records(items: list[_Completion]) -> list[dict[str, Any]]:
    """train/reward_records.jsonl: one line per statement, one per completion without any."""
    out: list[dict[str, Any]] = []
    for item in items:
        base = {"completion": item.index, "row_id": item.row.get("id"), "status": item.status}
        if not item.statements:
            out.append({**base, "error": item.error, "dropped": item.dropped})
        for st in item.statements:
            out.append({**base, "sentence_index": st.sentence.index, "sentence": st.sentence.text,
                        "statement": st.text, "verdict": st.verdict, "score": st.score, "token": st.token,
                        "located": st.located, "truth": st.truth})
    return out


__all__ = ["DIAGNOSTIC_KEYS", "RLFHReward"]
