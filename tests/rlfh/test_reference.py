"""RLFH's reference answers (methods/rlfh/reference.py: the documented rules) and the reward through
the real `judge=reference` backend: every completion with evidence gets a signal, and the honest
correct answer earns more than the honest wrong one."""
from __future__ import annotations

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.services.judge import open_judge, reference_tools
from factrl.methods.rlfh import placement, reference
from factrl.methods.rlfh.prompts import prompts_for
from factrl.methods.rlfh.reward import RLFHReward

from .test_reward import batch

TOOLS = reference_tools()


def test_extraction_echoes_sentences_verbatim():
    response = "Marie Curie was born in Warsaw in 1867. I don't know. Was it Paris? I recall that the answer is Warsaw.\nWarsaw"
    labels = reference.extract({"response": response}, TOOLS)
    assert labels == [["Marie Curie was born in Warsaw in 1867.", ["Marie Curie was born in Warsaw", "Warsaw in 1867"]],
                      ["I recall that the answer is Warsaw.", ["The answer is Warsaw"]]]
    assert all(placement.locate(echo, response, 1.0) is not None for echo, _ in labels)  # each a run of the response
    assert reference.extract({"response": "I am not sure. What is it?"}, TOOLS) == []  # "No statements"


@pytest.mark.parametrize("statement, verdict", [("Marie Curie was born in Warsaw", "correct"),
                                                ("Marie Curie was born in Paris", "wrong"),
                                                ("Albert Einstein played the violin", "vague"),
                                                ("the of and", "vague")])
def test_verdicts_from_lexical_support(statement, verdict):
    materials = ["Marie Curie was born in Warsaw. Marie Curie won two Nobel Prizes."]
    assert reference.verify({"materials": materials, "statement": statement}, TOOLS) == verdict
    assert reference.verify({"materials": [], "statement": statement}, TOOLS) == "vague"


@pytest.mark.parametrize("statement, score", [("The answer is Warsaw", 5), ("Marie Curie was born in Poland", 4),
                                              ("Curie was a chemist", 3), ("Albert Einstein played the violin", 2),
                                              ("it was nice", 1)])
def test_informativeness_rule(statement, score):
    item = {"question": "Where was Marie Curie born?", "statement": statement, "answer": "Warsaw"}
    assert reference.assess(item, TOOLS) == score


@pytest.fixture()
def reference_judge(store):
    with open_judge(compose(["judge=reference"]).judge, prompts=prompts_for("released", "released"), evidence=store) as judge:
        yield judge


def test_the_reference_backend_gives_a_signal(reference_judge, store, tokenizer):
    pairs = [("<think>I recall that the answer is Warsaw.</think><answer>Warsaw</answer>", "curie"),
             ("<think>I recall that the answer is Paris.</think><answer>Paris</answer>", "curie"),
             ("<think>Albert Einstein was born in Ulm in 1879.</think><answer>Ulm</answer>", "einstein"),
             ("<think>Arthur's Magazine was started first. First for Women was started in 1989.</think>"
              "<answer>Arthur's Magazine</answer>", "magazine"),
             ("<think>I am not sure.</think><answer>I don't know</answer>", "curie")]
    out = RLFHReward(tokenizer=tokenizer, judge=reference_judge, store=store)(**batch(tokenizer, pairs))
    sums = [sum(r) for r in out.token_returns]  # every one has a signal
    assert sums[0] > sums[1] and sums[2] > 0 and sums[3] > 0 and sums[4] == 0.0
    assert out.diagnostics["judge_failed"] == 0 and out.diagnostics["statements"] >= 5
    component = reference_judge.describe()
    assert component["backend"] == "reference" and component["stand_in"] is True
    assert {name: p["version"] for name, p in component["prompts"].items()} == {
        "rlfh_extract": "2", "rlfh_verify": "2", "rlfh_assess": "2"}
