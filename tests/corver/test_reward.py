"""Sentence reward: validity rules, count -> reward, and FIRST / MIN / RELCHECK on a real index."""
from __future__ import annotations

from dataclasses import replace

import pytest

from factrl.harness.services.corpus import CountResult
from factrl.methods.corver.reward import (CorpusRewardSettings, bucket, count_reward, score_sentences,
                                          valid_triples)

HIGH = ["Paris", "is the capital of", "France"]  # 25 co-occurrences; relation "capital": 25
HIGH_BAD_REL = ["Paris", "was founded by", "France"]  # 25; relation "founded": 0
MID = ["Einstein", "was born in", "Ulm"]  # 8
LOW = ["Curie", "studied in", "Warsaw"]  # 2
ZERO = ["Mozart", "lived in", "Tokyo"]  # 0
# 40 distinct capitalised words: a 41-term query, over the counter's clause limit -> a failed lookup.
FAILING = [" ".join(f"Name{chr(65 + i // 26)}{chr(65 + i % 26)}" for i in range(40)), "is", "France"]


class DictCounter:
    """Plain counts by term tuple, for the mapping logic only (no engine behaviour involved)."""

    def __init__(self, counts):
        self.counts, self.calls = counts, []

    def count_many(self, queries):
        self.calls.append([list(q) for q in queries])
        return [CountResult(self.counts[tuple(q)]) if tuple(q) in self.counts else CountResult(None, error="down")
                for q in queries]


@pytest.mark.parametrize("count, status, reward", [
    (0, "zero", -0.2), (1, "low", -0.1), (4, "low", -0.1), (5, "mid", 0.0), (19, "mid", 0.0),
    (20, "high", 0.1), (10**6, "high", 0.1), (None, None, 0.0),
])
def test_count_to_reward_paper_defaults(count, status, reward):
    assert count_reward(count) == pytest.approx(reward)
    if count is not None:
        assert bucket(count, (5, 20)) == status


def test_configurable_alphas_and_taus():
    v1 = CorpusRewardSettings.from_mapping(alphas=(-0.3, -0.1, 0.0, 0.1))  # v1 / released code
    assert count_reward(0, v1) == -0.3
    wide = CorpusRewardSettings.from_mapping(taus=(2, 10), alphas=(-1, -0.5, 0.5, 1))
    assert [count_reward(c, wide) for c in (0, 1, 2, 9, 10)] == [-1, -0.5, 0.5, 0.5, 1]
    for bad in ({"taus": (20, 5)}, {"taus": (0, 5)}, {"alphas": (0.1, 0.2)}, {"aggregation": "max"}):
        with pytest.raises(ValueError):
            replace(CorpusRewardSettings.from_mapping(), **bad)
    cfg = CorpusRewardSettings.from_mapping({"aggregation": "MIN", "taus": [3, 9], "alphas": [-1, 0, 0, 1]})
    assert cfg.aggregation == "min" and cfg.taus == (3, 9) and cfg.alphas == (-1.0, 0.0, 0.0, 1.0)


def test_valid_triple_rules():
    cases = [
        (["Paris", "in", "France"], ["Paris", "France"]),
        (["He", "was born in", "Ulm"], None),  # pronoun head
        (["Einstein", "met", "them"], None),  # pronoun tail
        (["Paris", "in"], None),  # two elements
        (["Paris", "in", "France", "Europe"], None),  # four elements
        (["", "in", "France"], None),  # empty head
        (["Paris", "is", "Paris"], None),  # one distinct term
        ([1889, "year", "Eiffel"], None),  # not a string
        ("Paris in France", None),  # not a list
    ]
    for triple, terms in cases:
        got = valid_triples([triple])
        assert (got[0][1] if got else None) == terms, triple
    # Order is kept: the first valid triple comes first.
    got = valid_triples([["He", "is", "x"], ["Ulm", "in", "Germany"], ["Paris", "in", "France"]])
    assert [t for t, _ in got] == [["Ulm", "in", "Germany"], ["Paris", "in", "France"]]


def test_first_on_the_real_index(counter):
    batch = score_sentences([[HIGH], [MID], [LOW], [ZERO], [], [["He", "is", "nice"]], [ZERO, HIGH]], counter)
    got = [(s.status, s.count, s.reward) for s in batch.scores]
    assert got == [("high", 25, 0.1), ("mid", 8, 0.0), ("low", 2, -0.1), ("zero", 0, -0.2),
                   ("no_triple", None, 0.0), ("invalid", None, 0.0), ("zero", 0, -0.2)]  # first valid only
    assert batch.scores[0].query == ["Paris", "France"] and batch.lookups == 5


def test_first_failed_lookup_gives_zero_without_trying_later_triples(counter):
    batch = score_sentences([[FAILING, HIGH]], counter)
    score = batch.scores[0]
    assert score.status == "failed" and score.reward == 0.0 and score.count is None
    assert "clauses" in score.error and score.triple == FAILING


def test_min_takes_the_smallest_successful_count(counter):
    cfg = CorpusRewardSettings.from_mapping(aggregation="min")
    batch = score_sentences([[HIGH, LOW, MID], [HIGH, MID], [FAILING, HIGH], [FAILING], [HIGH, ZERO]], counter, cfg)
    got = [(s.status, s.count, s.reward) for s in batch.scores]
    assert got == [("low", 2, -0.1), ("mid", 8, 0.0), ("high", 25, 0.1), ("failed", None, 0.0), ("zero", 0, -0.2)]
    assert batch.scores[0].triple == LOW and len(batch.scores[0].candidates) == 3
    assert batch.lookups == 10  # every valid pair of every sentence, in one count_many call


def test_relcheck_lowers_high_counts_whose_relation_never_cooccurs(counter):
    cfg = CorpusRewardSettings.from_mapping(aggregation="relcheck")
    batch = score_sentences([[HIGH], [HIGH_BAD_REL], [MID], [["Paris", "France", "France"]]], counter, cfg)
    s_ok, s_bad, s_mid, s_unusable = batch.scores
    assert (s_ok.reward, s_ok.relation_query, s_ok.relation_count) == (0.1, ["Paris", "capital", "France"], 25)
    assert (s_bad.reward, s_bad.relation_query, s_bad.relation_count) == (-0.05, ["Paris", "founded", "France"], 0)
    assert s_bad.status == "high" and s_bad.count == 25
    assert s_mid.relation_query is None and s_mid.reward == 0.0  # under tau2: no relation check
    # A relation that only repeats the pair's terms gives under three terms: unusable, unchanged.
    assert s_unusable.relation_query is None and s_unusable.reward == 0.1


def test_relcheck_failed_relation_lookup_keeps_the_reward():
    counter = DictCounter({("Paris", "France"): 30})  # the relation query fails
    cfg = CorpusRewardSettings.from_mapping(aggregation="relcheck")
    score = score_sentences([[HIGH]], counter, cfg).scores[0]
    assert score.reward == 0.1 and score.relation_count is None
    assert counter.calls == [[["Paris", "France"]], [["Paris", "capital", "France"]]]  # two batched calls


def test_one_batched_lookup_per_step():
    counter = DictCounter({("Paris", "France"): 30, ("Curie", "Warsaw"): 3})
    score_sentences([[HIGH], [LOW], [HIGH], []], counter)
    assert len(counter.calls) == 1 and len(counter.calls[0]) == 3  # the counter deduplicates
