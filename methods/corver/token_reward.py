"""The CorVer reward callable: completions -> per-token returns (docs/PROTOCOL.md §3).

    R(g, t) = R_response(g) + 1[sigma(t) is a sentence] * lambda_c * r_c(sentence of t)

One call scores a whole generation batch (Q questions x C completions):
1. response-level reward of every completion against its own row's gold (harness.core.rewards);
2. alignment of every completion's tokens to its sentences (harness.core.completions); a
   completion whose alignment rate is under the threshold keeps only R_response and sends
   nothing to the extractor or the corpus;
3. one extractor call over all sentences of all completions;
4. one batched corpus lookup (two for relcheck), deduplicated and cached by the counter;
5. per-token returns, diagnostics and one record per sentence.
Group means, standard deviations and advantages are the trainer's job, not this one's.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from factrl.harness.core import completions as comp
from factrl.harness.core.method import RewardOutput
from factrl.harness.core.rewards import ResponseRewardSettings, response_rewards
from factrl.harness.core.settings import FLAT, Settings

from .extractor import ExtractorSettings
from .reward import STATUSES, CorpusRewardSettings, SentenceScore, score_sentences

ASSIGNMENTS = ("token", "sentence_mean")


@dataclass(frozen=True)
class CorVerSettings(Settings):
    """`method.*` of method=corver: the token assignment plus the response and corpus reward
    settings that share the node; configs/method/corver.yaml holds every default and its quote."""

    OWNER = "method"
    DEFAULTS = "method/corver.yaml"
    RANGES = {"lambda_c": "[0, inf)", "alignment_threshold": "[0, 1]"}
    IGNORE = ("name",)

    lambda_c: float  # weight of the corpus reward; 0 = ablation A1 (nothing is opened)
    assignment: str  # token: per-token alignment; sentence_mean: ablation A3
    alignment_threshold: float  # docs/PROTOCOL.md §1: "fewer than 50% of the tokens ... align"
    splitter: str
    extractor: ExtractorSettings  # method.extractor.*: the triple extractor
    response: ResponseRewardSettings = field(metadata=FLAT)
    corpus: CorpusRewardSettings = field(metadata=FLAT)

    def __post_init__(self) -> None:
        if self.assignment not in ASSIGNMENTS:
            raise ValueError(f"assignment={self.assignment!r}: choose one of {ASSIGNMENTS}")
        if not 0.0 <= self.alignment_threshold <= 1.0:
            raise ValueError(f"alignment_threshold={self.alignment_threshold} must lie in [0, 1]")
        if self.splitter not in comp.SPLITTERS:
            raise ValueError(f"splitter={self.splitter!r}: choose one of {comp.SPLITTERS}")


class CorVerReward:
    """reward(*, prompts, completions, completion_ids, rows, **kwargs) -> RewardOutput."""

    def __init__(self, *, tokenizer: Any, settings: CorVerSettings, extractor: Any = None, counter: Any = None,
                 corpus_config: Mapping[str, Any] | None = None):
        self.tokenizer = tokenizer
        self.extractor, self.counter = extractor, counter
        self.settings, self.response, self.corpus = settings, settings.response, settings.corpus
        self.corpus_config = dict(corpus_config or {})  # the `corpus` group the counter came from
        self.uses_corpus = self.settings.lambda_c != 0.0
        if self.uses_corpus and (extractor is None or counter is None):
            raise ValueError("lambda_c != 0 needs an extractor and a corpus counter")
        self.__name__ = "corver"

    def __call__(self, *, prompts: Sequence[str] | None = None, completions: Sequence[str],
                 completion_ids: Sequence[Sequence[int]], rows: Sequence[Mapping[str, Any]],
                 **kwargs: Any) -> RewardOutput:
        started = time.perf_counter()
        n = len(completions)
        if len(completion_ids) != n:
            raise ValueError(f"{len(completion_ids)} completion_ids for {n} completions")
        resp = response_rewards(completions=completions, rows=rows, completion_ids=completion_ids,
                                config=self.response)
        aligned: list[comp.Alignment | None] = [None] * n
        align_seconds = 0.0
        if self.uses_corpus:
            t0 = time.perf_counter()
            aligned = [comp.align(self.tokenizer, ids, splitter=self.settings.splitter) if len(ids) else None
                       for ids in completion_ids]
            align_seconds = time.perf_counter() - t0
        usable = [a is not None and a.usable(self.settings.alignment_threshold) for a in aligned]
        # Every sentence of every usable completion, in one list: one extractor call per step.
        owners = [(b, s) for b in range(n) if usable[b] for s in aligned[b].sentences]  # type: ignore[union-attr]
        extractor_seconds = lookup_seconds = 0.0
        scores: list[SentenceScore] = []
        if owners:
            t0 = time.perf_counter()
            triples = self.extractor.extract([s.text for _, s in owners])
            extractor_seconds = time.perf_counter() - t0
            batch = score_sentences(triples, self.counter, self.corpus)
            scores, lookup_seconds = batch.scores, batch.lookup_seconds
        per_completion: list[list[float]] = [[] for _ in range(n)]
        for (b, _), score in zip(owners, scores):
            per_completion[b].append(score.reward)
        returns = [self._returns(len(completion_ids[b]), resp.total[b], aligned[b], per_completion[b] if usable[b]
                                 else None) for b in range(n)]
        diagnostics = {**resp.diagnostics(), **self._corpus_diagnostics(scores, aligned, usable, n)}
        diagnostics.update(alignment_seconds=align_seconds, extractor_seconds=extractor_seconds,
                           lookup_seconds=lookup_seconds, response_seconds=resp.seconds,
                           seconds=time.perf_counter() - started)
        records = [self._record(b, s, score, aligned[b], rows[b], resp.correct[b])
                   for (b, s), score in zip(owners, scores)]
        return RewardOutput(token_returns=returns, diagnostics=diagnostics, records=records)

    def _returns(self, length: int, base: float, alignment: comp.Alignment | None,
                 sentence_rewards: list[float] | None) -> list[float]:
        lam = self.settings.lambda_c
        if alignment is None or sentence_rewards is None:
            return [float(base)] * length  # fallback: response-level return only
        if self.settings.assignment == "sentence_mean":
            # A3: "retains the same corpus signal but averages it into a single response score"
            mean = sum(sentence_rewards) / len(sentence_rewards) if sentence_rewards else 0.0
            return [float(base) + lam * mean] * length
        return comp.token_returns(alignment.sigma, base, sentence_rewards, lam)

    def _corpus_diagnostics(self, scores: list[SentenceScore], aligned: list, usable: list[bool],
                            n: int) -> dict[str, float]:
        total = len(scores)
        out = {f"frac_{status}": (sum(s.status == status for s in scores) / total if total else 0.0)
               for status in STATUSES}
        rates = [a.rate for a in aligned if a is not None]
        out.update(
            corpus_reward_mean=sum(s.reward for s in scores) / total if total else 0.0,
            sentences=float(total),
            sentences_per_completion=total / n if n else 0.0,
            relcheck_lowered=(sum(s.relation_count == 0 for s in scores) / total if total else 0.0),
            alignment_rate_mean=sum(rates) / len(rates) if rates else 0.0,
            # Completions left with the response-level return only (alignment under the
            # threshold, or no sentence at all); 0 when the corpus reward is off (A1).
            alignment_fallback_rate=(sum(not u for u in usable) / n if n and self.uses_corpus else 0.0),
            spans_decoded_rate=(sum(a.method != "offsets" for a in aligned if a is not None) / len(rates)
                                if rates else 0.0),
        )
        stats = getattr(self.extractor, "last_stats", None) or {}
        out["extractor_cache_hit_rate"] = (stats.get("cache_hits", 0.0) / stats["unique"]
                                           if stats.get("unique") and total else 0.0)
        return out

    @staticmethod
    def _record(b: int, sentence: comp.Sentence, score: SentenceScore, alignment: Any, row: Mapping[str, Any],
                correct: bool) -> dict[str, Any]:
        record = {
            "completion": b, "row_id": row.get("id"), "sentence_index": sentence.index,
            "section": sentence.section, "sentence": sentence.text,
            "tokens": sum(1 for s in alignment.sigma if s == sentence.index),
            "triple": score.triple, "query": score.query, "count": score.count, "status": score.status,
            "reward": score.reward, "answer_correct": bool(correct),
        }
        if score.error:
            record["error"] = score.error
        if score.relation_query is not None:
            record.update(relation_query=score.relation_query, relation_count=score.relation_count)
        if score.candidates:
            record["candidates"] = score.candidates
        return record

    def close(self) -> None:
        """Close the extractor and the counter (the engine calls it when training ends)."""
        for part in (self.extractor, self.counter):
            if part is not None and hasattr(part, "close"):
                part.close()


__all__ = ["ASSIGNMENTS", "CorVerReward", "CorVerSettings"]
