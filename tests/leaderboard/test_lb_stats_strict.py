"""The strict accuracy variant: no credit for answers listing several candidates (issue 15)."""
from __future__ import annotations

import pytest

from factrl.evals.answers import match_closed_book
from factrl.evals.sets import load_set
from factrl.leaderboard.diagnostics import compute, strict_correct


@pytest.mark.parametrize("answer, references", [
    ("X or possibly Paris or 1990", ["Paris"]),
    ("It could be X, London, Paris, Berlin, 1990", ["Paris"]),
    ("Washington, D.C., New York, Boston", ["Washington, D.C."]),
    ("Paris; London", ["London"]),
])
def test_hedges_that_the_protocol_credits_are_not_strictly_correct(answer, references):
    assert match_closed_book(answer, references)  # the protocol's matcher is gamed by the list
    assert not strict_correct(answer, references, True)


@pytest.mark.parametrize("answer, references", [
    ("Bosnia and Herzegovina", ["Bosnia and Herzegovina"]),
    ("Washington, D.C.", ["Washington, D.C."]),
    ("Springfield, Illinois", ["Springfield"]),
    ("Now or Never", ["Now or Never"]),  # a hedge by form, but the reference's own text
])
def test_single_answers_with_commas_and_and_keep_scoring(answer, references):
    assert match_closed_book(answer, references) and strict_correct(answer, references, True)


def test_real_references_with_commas_or_and_keep_scoring(shared_data):
    """Every NQ-Open / PopQA reference containing a comma, 'and' or 'or', given as the answer."""
    checked = 0
    for name in ("nq_open", "popqa"):
        for record in load_set(name, data_dir=shared_data / "benchmarks").records:
            for ref in record.references:
                if "," in ref or " and " in ref or " or " in ref:
                    checked += 1
                    assert strict_correct(ref, record.references, match_closed_book(ref, record.references)), ref
    assert checked > 50


def test_strict_accuracy_in_the_row_diagnostics():
    samples = [{"id": "1", "answer": "Paris", "references": ["Paris"], "correct": True},
               {"id": "2", "answer": "Paris or Rome", "references": ["Rome"], "correct": True},
               {"id": "3", "answer": "Lima", "references": ["Quito"], "correct": False},
               {"id": "4", "answer": "Bosnia and Herzegovina", "references": ["Bosnia and Herzegovina"],
                "correct": True}]
    found = compute(samples)
    assert found["accuracy_strict"] == 0.5 and found["strict_rule"] == "1"
    assert compute([{"id": "1", "answer": "x"}])["accuracy_strict"] is None  # no verdicts stored
