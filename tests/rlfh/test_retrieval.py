"""RLFH's materials and hedge filter against the reference vectors computed by running upstream's
build_verify_prompt / Retrieval and post_process (tests/reference_vectors/rlfh/retrieval.json,
hedge_filter.json), then the same rules over the real evidence store."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from factrl.harness.services.judge.prompts import find_material
from factrl.methods.rlfh.prompts import VERIFY
from factrl.methods.rlfh.retrieval import (NLTK_ENGLISH, STOPS, Retriever, RowIndex, build_sections, gold_sentence, keep_top,
                                           sent_tokenize, word_tokenize)
from factrl.methods.rlfh.settings import is_hedge

from .conftest import ARTICLES, ROWS, VECTORS


def cases(name: str) -> list[dict]:
    return json.loads((VECTORS / f"{name}.json").read_text(encoding="utf-8"))["cases"]


# The local path's aliasing (the row's list grows on every build) is a defect of the release's
# self-judging path, not reproduced (README "Fidelity").
RETRIEVAL = [c for c in cases("retrieval") if "first_call" not in c["output"]]


def _inputs(case: dict) -> tuple[list[str], list[str]]:
    i = case["input"]
    if i["extra_materials"] is None:  # the release zips titles with materials: extras drop out
        return list(i["titles"]), list(i["materials"])
    return [""] * len(i["materials"]) + list(i["titles"]), list(i["materials"]) + list(i["extra_materials"])


@pytest.mark.parametrize("case", RETRIEVAL, ids=lambda c: c["name"][:50])
def test_sections_scores_and_materials_are_the_released_ones(case):
    i, out = case["input"], case["output"]
    titles, materials = _inputs(case)
    sections, tokenized = build_sections(titles, materials, i["max_words_per_sec"])
    assert sections == out["sections"] and tokenized == out["tokenized_sections"]
    index = RowIndex(titles, materials, i["max_words_per_sec"], None)
    queries = sent_tokenize(i["statement"]) or [i["question"]]
    total = np.zeros(len(sections))
    for query, expected in zip(queries, out["queries"], strict=True):
        assert word_tokenize(query) == expected["tokens"]
        scores = index.scores(query)
        assert scores == pytest.approx(expected["bm25"], abs=1e-12)
        kept = keep_top(scores, i["max_secs"])
        assert kept == pytest.approx(expected["after_keep_topk"], abs=1e-12)
        total += kept
    assert total == pytest.approx(out["summed_scores"], abs=1e-12)
    assert index.top(i["statement"], i["max_secs"], question=i["question"]) == out["materials"]


@pytest.mark.parametrize("case", RETRIEVAL[:4], ids=lambda c: c["name"][:50])
def test_the_verify_prompt_is_the_released_one_around_its_material_block(case):
    """Our prompt = the release's, plus the material rule line and the statement's (and the
    example statement's) material tags."""
    ours = VERIFY.render({"materials": case["output"]["materials"], "statement": case["input"]["statement"]})[0]["content"]
    for _, body in find_material(ours):
        ours = re.sub(r"<material-[0-9a-f]{12} label=\"statement\">" + re.escape(body) + r"</material-[0-9a-f]{12}>",
                      lambda _m, body=body: body, ours, count=1)
    ours = "\n".join(line for line in ours.split("\n") if not line.startswith("Text between <material-"))
    assert ours == case["output"]["prompt"]


def test_stopwords_are_nltks_english_list_plus_the_releases():
    assert len(NLTK_ENGLISH) == len(set(NLTK_ENGLISH)) == 179 and (NLTK_ENGLISH[0], NLTK_ENGLISH[-1]) == ("i", "wouldn't")
    assert STOPS - set(NLTK_ENGLISH) == {"!", ",", ".", "?", "-s", "-ly", "</s> ", "s"} - set(NLTK_ENGLISH)


def test_gold_sentence_as_the_data_builder_writes_it():
    """dataset.py:114: question[:-1] with '?' removed, the first answer."""
    assert gold_sentence("Which magazine was started first Arthur's Magazine or First for Women?", "Arthur's Magazine") \
        == "The correct answer for \"Which magazine was started first Arthur's Magazine or First for Women\" is " \
           "\"Arthur's Magazine\"."
    assert gold_sentence("where was marie curie born", "Warsaw") == 'The correct answer for "where was marie curie born" is "Warsaw".'


@pytest.mark.parametrize("case", cases("hedge_filter"), ids=lambda c: c["name"][:50])
def test_hedge_filter_is_the_released_one(case):
    if "sentence" in case["input"]:
        assert (not is_hedge(case["input"]["sentence"])) == case["output"]["kept"]
    else:
        kept = [s for s in case["input"]["sentences"] if not is_hedge(s)]
        assert kept == case["output"]["kept_in_order"]


def test_row_materials_from_the_store(store):
    retriever = Retriever(store, max_secs=3, max_words_per_sec=64, gold_material=True)
    row = ROWS["curie"]
    assert retriever.articles(row) == [("Marie Curie", ARTICLES[0]["text"])]  # the article, whole
    index = retriever.index(row)
    gold = 'The correct answer for "Where was Marie Curie born" is "Warsaw".'
    expected, _ = build_sections(["", "Marie Curie"], [gold, ARTICLES[0]["text"]], 64)
    assert index.sections == expected and len(expected) == 3 and expected[1].startswith("<Marie Curie> ")
    # the gold sentence competes: shown for a statement about the answer, not for an unrelated one
    assert gold in retriever.materials(row, "The answer is Warsaw.")
    shown = retriever.materials(row, "Her daughter Irene won a Nobel Prize.")
    assert gold not in shown and any("Irene" in s for s in shown)
    assert retriever.index(row) is index and retriever.stats["rows_built"] == 1  # built once per row
    off = Retriever(store, max_secs=3, max_words_per_sec=64, gold_material=False)
    assert all("correct answer" not in s for s in off.materials(row, "The answer is Warsaw."))
    # no article: the gold sentence alone (the reward gives such rows no signal before asking)
    assert retriever.materials(ROWS["nowhere"], "Shakespeare wrote Hamlet.") == [
        'The correct answer for "Who wrote Hamlet" is "Shakespeare".']
