"""FActScore-NPM retrieval on a store the test writes: top article by BM25, then its top passages;
quotes, hyphens and FTS operators in claims are plain words."""
from __future__ import annotations

import pytest

from tests.evals.factscore_helpers import build_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from factrl.harness.evidence import open_store

    with open_store(build_store(tmp_path_factory.mktemp("fs-store"))) as opened:
        yield opened


@pytest.mark.parametrize("claim, article", [
    ("Jean-Paul Sartre declined the Nobel Prize in Literature.", "Jean-Paul Sartre"),
    ('The "NEAR" probe studied the asteroid Eros.', "NEAR Shoemaker"),
    ("NEAR(Shoemaker studied Eros", "NEAR Shoemaker"),
    ("AND OR NOT are operators of logic: conjunction", "Logical conjunction"),
    ('Paris is the capital of "France', "Paris"),
    ("-Berlin is the capital of Germany*", "Berlin"),
    ("Marie Curie won the Nobel Prize in Physics ^ 1903", "Marie Curie"),
])
def test_claims_with_fts_syntax_find_their_article(store, claim, article):
    from factrl.evals.factscore import ClaimRetriever

    retriever = ClaimRetriever(store)
    title, passages = retriever.passages(claim)
    assert title == article
    assert 1 <= len(passages) <= 3
    assert {p.title for p in passages} == {article}  # passages come from that one article
    scores = [p.score for p in passages]
    assert scores == sorted(scores, reverse=True)


def test_top_passages_are_the_articles_best_for_the_claim(store):
    from factrl.evals.factscore import ClaimRetriever

    _, passages = ClaimRetriever(store, k=1).passages("Paris hosts the Louvre museum")
    assert "Louvre" in passages[0].text  # the Paris article has several 12-word passages


def test_a_claim_with_no_matching_article_is_counted(store):
    from factrl.evals.factscore import ClaimRetriever

    retriever = ClaimRetriever(store)
    assert retriever.passages("Zanzibar xylophones quietly") == (None, [])
    assert retriever.passages("") == (None, [])
    assert retriever.stats["no_article"] == 2 and retriever.stats["claims"] == 2
