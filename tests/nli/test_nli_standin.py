"""The lexical stand-in: deterministic, documented rules, always recorded as a stand-in."""
from __future__ import annotations

import pytest

from factrl.harness.core.errors import DataError
from factrl.harness.services.nli import load_nli
from factrl.harness.services.nli.standin import CAP
from factrl.harness.training.components import check_components

PREMISE = ("The Eiffel Tower was built in 1889 in Paris, the capital of France. "
           "Its population is about 2,100,000 people.")


@pytest.fixture()
def scorer():
    return load_nli(None)  # the embedded default


@pytest.mark.parametrize("hypothesis, low, high", [
    ("The Eiffel Tower is in Paris.", 0.99, 1.0),                # every content word present
    ("Paris has 2,100,000 people.", 0.99, 1.0),                 # commas in numbers, plurals
    ("The Eiffel Tower was built in 1900.", 0.0, CAP),          # wrong number: contradiction
    ("The Eiffel Tower is not in Paris.", 0.0, CAP),            # negation the premise lacks
    ("The Eiffel Tower isn't in Paris.", 0.0, CAP),
    ("Berlin is the capital of Germany.", 0.3, 0.4),            # 1 of 3 claims (capital)
    ("Let me think about it.", 0.0, 0.0),                       # filler words are claims too
    ("So it is.", 0.5, 0.5),                                    # nothing to check: undecided
])
def test_rules(scorer, hypothesis, low, high):
    [value] = scorer.score([(PREMISE, hypothesis)])
    assert low <= value <= high


def test_fspo_threshold_semantics(scorer):
    supported, undecided = scorer.score([(PREMISE, "Paris is the capital of France."), (PREMISE, "So it was.")])
    assert supported > 0.5 and not undecided > 0.5  # FSPO: factual iff > 0.5


def test_deterministic_and_ordered(scorer):
    pairs = [(PREMISE, "Paris"), (PREMISE, "Berlin"), ("", "Paris"), (PREMISE, "1889")]
    assert scorer.score(pairs) == scorer.score(pairs) == [scorer.score([p])[0] for p in pairs]
    assert scorer.score(pairs) == [1.0, 0.0, 0.0, 1.0]


def test_describe_marks_stand_in(scorer):
    entry = scorer.describe()
    assert entry["stand_in"] is True and entry["kind"] == "nli" and "not HHEM" in entry["note"]
    check_components("fspo", {"nli": entry})


@pytest.mark.parametrize("bad", ["premise", [("a",)], [("a", 1)], [["a", "b", "c"]]])
def test_bad_pairs(scorer, bad):
    with pytest.raises(DataError, match="pair"):
        scorer.score(bad)
