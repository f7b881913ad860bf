"""SimpleQA's grader against simple-evals' own outputs (tests/reference_vectors/simple_evals/:
grade_parse.json, metrics.json, computed by running openai/simple-evals@ee3b031)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

VECTORS = Path(__file__).resolve().parents[1] / "reference_vectors" / "simple_evals"
LETTERS = {"A": "CORRECT", "B": "INCORRECT", "C": "NOT_ATTEMPTED"}


def _cases(name):
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))["cases"]


def test_the_template_is_simple_evals_verbatim():
    from factrl.evals.semantic.grader_template import GRADER_TEMPLATE

    # simpleqa_eval.py:13-92 after .strip(): 5,964 characters (upstream's hash, SOURCES of the vectors' run)
    assert len(GRADER_TEMPLATE) == 5964
    assert hashlib.sha256(GRADER_TEMPLATE.encode("utf-8")).hexdigest() == \
        "063c04ea798f91c4706c050b66a721afc77a458b12d8f0d72286d4b0eee8a3ee"


def test_the_grader_request_is_simple_evals_with_the_response_as_material():
    from factrl.evals.semantic import SIMPLEQA_GRADER
    from factrl.harness.services.judge import MATERIAL_RULE, find_material, material

    case = _cases("grade_parse.json")[0]
    given, request = case["input"], case["output"]["request"]
    messages = SIMPLEQA_GRADER.render({"question": given["question"], "gold": [given["target"]],
                                       "response": given["predicted_answer"], "answer": "Malia"})
    assert [m["role"] for m in messages] == [m["role"] for m in request["messages"]]
    assert messages[0] == request["messages"][0]  # "You are a helpful assistant."
    user = messages[1]["content"]
    assert find_material(user) == [("predicted answer", given["predicted_answer"])]
    # Upstream's message, plus one material-rule paragraph and the delimiting of the model's text:
    restored = user.replace(MATERIAL_RULE + "\n\n", "", 1).replace(
        material(given["predicted_answer"], label="predicted answer"), given["predicted_answer"])
    assert restored == request["messages"][1]["content"]
    decoding = SIMPLEQA_GRADER.decoding
    assert (decoding.temperature, decoding.max_tokens) == (request["temperature"], request["max_tokens"])


REPLIES = [c for c in _cases("grade_parse.json") if "grader_reply" in c["input"]]


@pytest.mark.parametrize("case", REPLIES, ids=lambda c: c["name"])
def test_the_released_parse_grades_as_simple_evals(case):
    from factrl.evals.semantic import SIMPLEQA_GRADER

    assert SIMPLEQA_GRADER.parse(case["input"]["grader_reply"]) == case["output"]["grade_string"]


@pytest.mark.parametrize("reply, grade", [("A", "CORRECT"), ("A: CORRECT", "CORRECT"), ("CORRECT", "CORRECT"),
                                          ("NOT_ATTEMPTED", "NOT_ATTEMPTED"), ("\nC\n", "NOT_ATTEMPTED"),
                                          ("a", "CORRECT")])
def test_the_strict_parse_reads_what_the_released_one_misreads(reply, grade):
    from factrl.evals.semantic import SIMPLEQA_GRADER_STRICT

    assert SIMPLEQA_GRADER_STRICT.parse(reply) == grade


@pytest.mark.parametrize("reply", ["Based on the gold target, the grade is A.", "I'd grade this A.", "", "ABC"])
def test_the_strict_parse_refuses_what_the_released_one_guesses(reply):
    from factrl.evals.semantic import SIMPLEQA_GRADER_STRICT
    from factrl.harness.services.judge import ParseError

    with pytest.raises(ParseError):
        SIMPLEQA_GRADER_STRICT.parse(reply)


@pytest.mark.parametrize("case", _cases("metrics.json"), ids=lambda c: c["name"])
def test_correct_incorrect_not_attempted_aga_and_f_are_simple_evals(case):
    from factrl.evals.semantic import simpleqa_metrics

    out = case["output"]
    m = simpleqa_metrics([LETTERS[g] for g in case["input"]["grades"]])
    agg = out["aggregate_metrics"]
    assert m["simpleqa_correct"]["value"] == pytest.approx(agg["is_correct"], abs=1e-15)
    assert m["simpleqa_incorrect"]["value"] == pytest.approx(agg["is_incorrect"], abs=1e-15)
    assert m["simpleqa_not_attempted"]["value"] == pytest.approx(agg["is_not_attempted"], abs=1e-15)
    assert m["simpleqa_accuracy_given_attempted"]["value"] == pytest.approx(out["accuracy_given_attempted"], abs=1e-15)
    assert m["simpleqa_f"]["value"] == pytest.approx(out["f1"], abs=1e-15)


def test_reference_grades_follow_the_matcher_on_the_extracted_answer():
    from factrl.evals.semantic import SIMPLEQA_GRADER
    from factrl.harness.services.judge import reference_tools

    tools = reference_tools()
    item = {"question": "Q?", "gold": ["Malia and Sasha"], "response": "<answer>x</answer>"}
    assert SIMPLEQA_GRADER.reference({**item, "answer": "Malia and Sasha"}, tools) == "CORRECT"
    assert SIMPLEQA_GRADER.reference({**item, "answer": "Michelle"}, tools) == "INCORRECT"
    assert SIMPLEQA_GRADER.reference({**item, "answer": "I don't know"}, tools) == "NOT_ATTEMPTED"
    assert SIMPLEQA_GRADER.reference({**item, "answer": ""}, tools) == "NOT_ATTEMPTED"
