"""FActScore-NPM retrieval: the top article by FTS5 (CorVer's adaptation) on a store the test
writes, with quotes, hyphens and FTS operators in claims read as plain words; then the article's
passages ranked as FActScore ranks them (tests/reference_vectors/factscore/retrieval_bm25.json:
upstream's Retrieval.get_passages, BM25Okapi on "topic + fact")."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evals.factscore_helpers import build_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from factrl.harness.services.evidence import open_store

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


VECTORS = json.loads((Path(__file__).resolve().parents[1] / "reference_vectors" / "factscore" /
                      "retrieval_bm25.json").read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", VECTORS, ids=lambda c: c["name"])
def test_passages_within_the_article_are_ranked_as_factscore_ranks_them(case):
    from factrl.evals.factscore.retrieval import rank_passages

    given, out = case["input"], case["output"]
    order, scores = rank_passages(given["topic"], given["fact"], given["article_passages"], given["k"])
    assert order == out["indices"]
    assert [given["article_passages"][i] for i in order] == out["passages"]
    assert scores == pytest.approx(out["bm25_scores"], rel=1e-12, abs=1e-12)


def test_the_retriever_ranks_every_passage_of_the_article_for_title_plus_claim(store):
    from factrl.evals.factscore import ClaimRetriever
    from factrl.evals.factscore.retrieval import rank_passages

    claim = "The river Seine flows through the city"
    title, passages = ClaimRetriever(store).passages(claim)
    article = store.by_title(title, k=1000)
    assert title == "Paris" and len(article) > 3  # 12-word passages: the article has several
    order, scores = rank_passages(title, claim, [p.text for p in article])
    assert [p.passage_id for p in passages] == [article[i].passage_id for i in order]
    assert [p.score for p in passages] == [scores[i] for i in order]
    assert len(passages) == 3  # three even where fewer passages share a word with the claim


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
