"""Heuristic claims (factrl.harness.core.claims): CorVer's heuristic triples, joined into claim sentences."""
from __future__ import annotations

from factrl.harness.core.claims import claims, heuristic_triples
from factrl.methods.corver.extractor import HeuristicExtractor


def test_claims_join_each_triple_sentence_by_sentence():
    text = ("Neil Armstrong walked on the Moon in July 1969. He was brave. "
            "Paris is the capital of France.")
    assert claims(text) == ["Neil Armstrong walked on the Moon", "Moon in July 1969", "Paris is the capital of France"]


def test_copula_claims_and_no_claims_without_a_name():
    everest = "Mount Everest is the highest mountain on Earth"
    assert claims(everest + ".") == [everest]
    assert claims("I think it is probably blue. Maybe not.") == []
    assert claims("") == [] and claims(None) == []


def test_claims_are_deduplicated_case_insensitively():
    assert claims("Paris is in France. PARIS is in FRANCE. Paris and Rome.") == ["Paris is in France"]
    assert claims("Alice, Bob.") == ["Alice and Bob"]  # names with no words between are linked by "and"


def test_the_corver_heuristic_extractor_uses_the_shared_triples():
    sentence = "The Bank of England was founded in 1694."
    assert HeuristicExtractor(cache=False, cache_size=0).extract([sentence]) == [heuristic_triples(sentence)]
