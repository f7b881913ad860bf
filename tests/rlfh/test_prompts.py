"""RLFH's judge prompts: strict parsers (an unknown label is a parse failure, never a guess)."""
from __future__ import annotations

import pytest

from factrl.harness.judge.prompts import ParseError
from factrl.methods.rlfh.prompts import ASSESS, EXTRACT, VERIFY, parse_extract, parse_score, parse_verdict


@pytest.mark.parametrize("reply, value", [("Correct", "correct"), ("correct.", "correct"), ("WRONG", "wrong"),
                                          ("Verdict: Vague", "vague"), ("**Wrong**", "wrong"), (" vague \n", "vague")])
def test_verdicts_read(reply, value):
    assert parse_verdict(reply) == value


@pytest.mark.parametrize("reply", ["Incorrect", "incorrect.", "Correct, but vague", "Not wrong", "The statement is correct",
                                   "Correct Wrong", "A", "", "Partially correct", "Uncorrect"])
def test_other_verdicts_are_parse_failures(reply):
    """RLFH matched by substring, so "Incorrect" read as Correct (BASELINES 9)."""
    with pytest.raises(ParseError):
        parse_verdict(reply)


@pytest.mark.parametrize("reply, value", [("5", 5), ("Score: 3", 3), ("4/5", 4), ("1.", 1)])
def test_scores_read(reply, value):
    assert parse_score(reply) == value


@pytest.mark.parametrize("reply", ["0", "6", "3.5", "about four", "4 - crucial", "45", ""])
def test_other_scores_are_parse_failures(reply):
    with pytest.raises(ParseError):
        parse_score(reply)


def test_extract_reads_blocks_and_no_statements():
    reply = (">> Sentence 0: Marie Curie was born in Warsaw in 1867.\n* Marie Curie was born in Warsaw.\n"
             "* Marie Curie was born in 1867.\n\n>> Sentence 2\n>> Sentence 1\n* She won two Nobel Prizes.\n"
             "* She won two Nobel Prizes.")
    assert parse_extract(reply) == [[0, ["Marie Curie was born in Warsaw.", "Marie Curie was born in 1867."]],
                                    [2, []], [1, ["She won two Nobel Prizes."]]]
    assert parse_extract("No statements") == [] and parse_extract("no statements.") == []


@pytest.mark.parametrize("reply", ["* a statement before any header", ">> Sentence 0\n* x\n>> Sentence 0\n* y",
                                   ">> Sentence 0\nMarie Curie was born in Warsaw.", "Sure! Einstein, Ulm.",
                                   "No statements\n>> Sentence 0\n* x", ">> Sentence one\n* x", ""])
def test_extract_refuses_anything_else(reply):
    with pytest.raises(ParseError):
        parse_extract(reply)


def test_renders_carry_the_item_and_versions():
    text = EXTRACT.render({"question": "Q?", "response": "R.", "sentences": [[3, "R."]]})[0]["content"]
    assert "[3] R." in text and "Question: Q?" in text
    text = VERIFY.render({"materials": ["p1", "p2"], "statement": "S."})[0]["content"]
    assert "- p1\n- p2" in text and "Statement: S." in text
    text = ASSESS.render({"question": "Q?", "response": "R.", "statement": "S."})[0]["content"]
    assert "Statement: S." in text and "5 - the statement answers the question." in text
    assert {p.version for p in (EXTRACT, VERIFY, ASSESS)} == {"1"}
    with pytest.raises(KeyError):
        VERIFY.render({"materials": [], "statement": "S."})
