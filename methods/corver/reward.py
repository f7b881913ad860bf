"""CorVer's sentence reward: triples -> corpus co-occurrence counts -> r_c (docs/PROTOCOL.md §2).

For each sentence the extractor's triples are filtered to the valid ones (three elements;
head and tail non-empty strings, neither a pronoun; head + tail give a word-level AND of at
least two distinct content terms, `factrl.harness.services.corpus.build_query`). The aggregation
rule picks what to count:

- first (paper default): the first valid triple only. A failed lookup gives 0; later
  triples are not tried.
- min: every valid triple; the smallest successful count (a successful zero included).
  No successful count gives 0.
- relcheck: first; when its count is >= tau2, also count subject + relation + object
  (at least three distinct terms); a successful zero there lowers the reward to -0.05.
  A positive count, a failed query or an unusable relation leaves the reward as it was.

Counts map to rewards piecewise: 0 -> alpha0, 1..tau1-1 -> alpha1, tau1..tau2-1 -> alpha2,
>= tau2 -> alpha3. No valid triple, or a failed lookup -> 0. All lookups of a step go to
the counter in one batch (`count_many` deduplicates and caches successful counts).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from factrl.harness.services.corpus import build_query, is_pronoun
from factrl.harness.core.settings import Settings

AGGREGATIONS = ("first", "min", "relcheck")
# Sentence outcomes, in the order diagnostics report them.
STATUSES = ("no_triple", "invalid", "failed", "zero", "low", "mid", "high")


@dataclass(frozen=True)
class CorpusRewardSettings(Settings):
    """Count -> reward mapping and aggregation; the defaults are the paper's v2 values, in
    configs/method/corver.yaml ("corpus reward"), each with its quote."""

    OWNER = "method"
    DEFAULTS = "method/corver.yaml"
    RANGES = {"taus": "[0, inf)", "alphas": "any", "relcheck_penalty": "any"}

    aggregation: str  # first | min | relcheck (any case)
    taus: tuple[int, ...]  # (tau1, tau2)
    alphas: tuple[float, ...]  # rewards of the buckets 0, 1..tau1-1, tau1..tau2-1, >= tau2
    relcheck_penalty: float  # relcheck: the reward of a successful zero relation count

    def __post_init__(self) -> None:
        object.__setattr__(self, "aggregation", str(self.aggregation).lower())
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation={self.aggregation!r}: choose one of {AGGREGATIONS}")
        taus = tuple(int(t) for t in self.taus)
        if len(taus) != 2 or not 0 < taus[0] < taus[1]:
            raise ValueError(f"taus={list(self.taus)}: give two thresholds 0 < tau1 < tau2 (paper: [5, 20])")
        if len(tuple(self.alphas)) != 4:
            raise ValueError(f"alphas={list(self.alphas)}: give four rewards for the count buckets "
                             f"0, 1..tau1-1, tau1..tau2-1, >=tau2 (paper: [-0.2, -0.1, 0.0, 0.1])")
        object.__setattr__(self, "taus", taus)
        object.__setattr__(self, "alphas", tuple(float(a) for a in self.alphas))


def bucket(count: int, taus: Sequence[int]) -> str:
    """The count bucket's status name: zero, low, mid or high."""
    if count <= 0:
        return "zero"
    if count < taus[0]:
        return "low"
    if count < taus[1]:
        return "mid"
    return "high"


def count_reward(count: int | None, cfg: CorpusRewardSettings | None = None) -> float:
    """Eq. (2): the reward of one successful count; None (no count) gives 0 (cfg None: the YAML's)."""
    cfg = cfg if cfg is not None else CorpusRewardSettings.from_mapping()
    if count is None:
        return 0.0
    return cfg.alphas[("zero", "low", "mid", "high").index(bucket(count, cfg.taus))]


def valid_triples(triples: Sequence[Any]) -> list[tuple[list[str], list[str]]]:
    """(triple, query terms) of every valid triple, in the extractor's order."""
    out = []
    for triple in triples or []:
        if not isinstance(triple, (list, tuple)) or len(triple) != 3:
            continue
        head, _, tail = triple
        if not (isinstance(head, str) and isinstance(tail, str) and head.strip() and tail.strip()):
            continue
        if is_pronoun(head) or is_pronoun(tail):
            continue
        terms = build_query(head, tail)
        if terms is not None:
            out.append(([str(x) for x in triple], terms))
    return out


@dataclass
class SentenceScore:
    """What happened to one sentence; becomes one record in the run's reward log."""

    status: str
    reward: float = 0.0
    triple: list[str] | None = None
    query: list[str] | None = None
    count: int | None = None
    error: str | None = None
    n_triples: int = 0
    n_valid: int = 0
    relation_query: list[str] | None = None
    relation_count: int | None = None
    candidates: list[dict[str, Any]] = field(default_factory=list)  # min: every pair tried


@dataclass
class ScoreBatch:
    scores: list[SentenceScore]
    lookup_seconds: float
    lookups: int  # queries sent to the counter (before its deduplication)


def _apply_count(score: SentenceScore, count: int | None, error: str | None, cfg: CorpusRewardSettings) -> None:
    if count is None:
        score.status, score.reward, score.error = "failed", 0.0, error
    else:
        score.count, score.status, score.reward = count, bucket(count, cfg.taus), count_reward(count, cfg)


def score_sentences(triples_per_sentence: Sequence[Sequence[Any]], counter: Any,
                    cfg: CorpusRewardSettings | None = None) -> ScoreBatch:
    """Sentence rewards for every sentence of a step, with at most two batched lookups (cfg
    None: the YAML's settings)."""
    cfg = cfg if cfg is not None else CorpusRewardSettings.from_mapping()
    scores: list[SentenceScore] = []
    queries: list[list[str]] = []
    owners: list[tuple[int, int]] = []  # (sentence, candidate) of each query
    for i, triples in enumerate(triples_per_sentence):
        valid = valid_triples(triples)
        score = SentenceScore(status="invalid" if triples else "no_triple", n_triples=len(triples or []),
                              n_valid=len(valid))
        scores.append(score)
        chosen = valid if cfg.aggregation == "min" else valid[:1]
        for j, (triple, terms) in enumerate(chosen):
            score.candidates.append({"triple": triple, "query": terms})
            queries.append(terms)
            owners.append((i, j))
    lookup_seconds, lookups = 0.0, len(queries)
    if queries:
        started = time.perf_counter()
        results = counter.count_many(queries)
        lookup_seconds += time.perf_counter() - started
        for (i, j), result in zip(owners, results):
            cand = scores[i].candidates[j]
            cand["count"] = result.count if result.ok else None
            cand["error"] = None if result.ok else (result.error or "lookup failed")
    for score in scores:
        if not score.candidates:
            continue
        if cfg.aggregation == "min":
            ok = [c for c in score.candidates if c["count"] is not None]
            best = min(ok, key=lambda c: c["count"]) if ok else score.candidates[0]
        else:
            best = score.candidates[0]
        score.triple, score.query = best["triple"], best["query"]
        _apply_count(score, best["count"], best["error"], cfg)
        if cfg.aggregation != "min":
            score.candidates = []  # one candidate: the record's triple/query say it all
    if cfg.aggregation == "relcheck":
        lookup_seconds += _relation_check(scores, counter, cfg)
        lookups += sum(s.relation_query is not None for s in scores)
    return ScoreBatch(scores, lookup_seconds, lookups)


def _relation_check(scores: list[SentenceScore], counter: Any, cfg: CorpusRewardSettings) -> float:
    """RELCHECK's second pass over the sentences whose pair count reached tau2."""
    todo = []
    for score in scores:
        if score.count is not None and score.count >= cfg.taus[1] and score.triple is not None:
            head, relation, tail = score.triple
            terms = build_query(head, tail, relation=relation)
            if terms is not None:
                score.relation_query = terms
                todo.append(score)
    if not todo:
        return 0.0
    started = time.perf_counter()
    results = counter.count_many([s.relation_query for s in todo])
    elapsed = time.perf_counter() - started
    for score, result in zip(todo, results):
        if result.ok:
            score.relation_count = result.count
            if result.count == 0:
                score.reward = cfg.relcheck_penalty
    return elapsed


__all__ = ["AGGREGATIONS", "STATUSES", "CorpusRewardSettings", "ScoreBatch", "SentenceScore", "bucket",
           "count_reward", "score_sentences", "valid_triples"]
