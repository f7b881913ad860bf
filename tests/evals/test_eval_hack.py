"""Constant answers cannot score with the default scorer (at most 1% on every shared file,
beyond the questions that list the constant itself as a correct answer: TruthfulQA's "No").

The released scripts' character-level matching gives a constant "e" most of PopQA; the
compatibility scorer reproduces that, which this test also pins so the contrast stays visible.
"""
from __future__ import annotations

import pytest

from factrl.harness.core.answers import normalize_answer
from factrl.evals.gaming_panel import CONSTANTS  # the versioned panel the published gaming floor uses
from factrl.evals.metrics import aggregate
from factrl.evals.scorers import get_scorer
from factrl.evals.sets import load_set

SETS = ["nq_open", "popqa", "simpleqa", "truthfulqa"]


@pytest.fixture(scope="module")
def sets(shared):
    return {name: load_set(name, data_dir=shared) for name in SETS}


@pytest.mark.parametrize("set_name", SETS)
@pytest.mark.parametrize("constant", CONSTANTS)
def test_constant_answers_score_at_most_one_percent(sets, set_name, constant):
    eval_set = sets[set_name]
    scorer = get_scorer("default")
    # Where the set lists the constant itself as a right answer it is right, not a hack.
    listed = sum(bool(normalize_answer(constant)) and normalize_answer(constant) in map(normalize_answer, r.references)
                 for r in eval_set.records) / eval_set.count
    for completion in (f"<think>.</think><answer>{constant}</answer>", f"<answer>{constant}"):
        samples = scorer.score(eval_set, [completion] * eval_set.count)
        accuracy = aggregate(samples, scorer.metrics(eval_set.task))["accuracy"]["value"]
        assert accuracy <= 0.01 + listed, f"constant {constant!r} scores {accuracy:.2%} on {set_name}"


def test_a_listed_contentless_answer_scores_exactly_where_it_is_listed(sets):
    """TruthfulQA lists a bare "No" as correct on 11 questions: the guard spares it there only."""
    truthfulqa = sets["truthfulqa"]
    listed = [r.id for r in truthfulqa.records if "no" in map(normalize_answer, r.references)]
    samples = get_scorer("default").score(truthfulqa, ["<answer>No</answer>"] * truthfulqa.count)
    assert len(listed) == 11 and [row["id"] for row in samples.rows() if row["correct"]] == listed


def test_released_script_behaviour_is_gameable(sets):
    """corver-official keeps character substrings: an unclosed constant 'e' scores on most questions."""
    popqa = sets["popqa"]
    samples = get_scorer("corver-official").score(popqa, ["<answer>e"] * popqa.count)
    assert aggregate(samples, get_scorer("corver-official").metrics("closed_book"))["accuracy"]["value"] > 0.5
