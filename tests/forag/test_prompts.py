"""FoRAG's judge prompts: rendering and strict parsers (unreadable replies raise, never guess)."""
from __future__ import annotations

import pytest

from factrl.harness.judge.prompts import ParseError
from factrl.methods.forag.prompts import DECOMPOSE, VERIFY, parse_subclaims, parse_verdict


@pytest.mark.parametrize("reply, value", [
    ("- Marie Curie was born in Warsaw.", ["Marie Curie was born in Warsaw."]),
    ("- A is B.\n\n- C is D.\n- a is b.", ["A is B.", "C is D."]),  # blank lines ok, duplicates once
    ("NO_CLAIMS", []), ("no claims.", []), ("NO_CLAIMS: a refusal", []),
])
def test_subclaims_parse(reply, value):
    assert parse_subclaims(reply) == value


@pytest.mark.parametrize("reply", [
    "", "Sure! Here are the claims:", "1. Curie was clever", "- A is B.\nNO_CLAIMS", "- A is B.\nand more",
    "- ", "Claims: - A is B.",
])
def test_subclaims_unreadable(reply):
    with pytest.raises(ParseError):
        parse_subclaims(reply)


@pytest.mark.parametrize("reply, value", [
    ("SUPPORTED", True), ("supported.", True), ("**Supported**", True), ("Verdict: SUPPORTED", True),
    ("NOT_SUPPORTED", False), ("Not supported.", False), ("UNSUPPORTED", False), ("`NOT SUPPORTED`", False),
])
def test_verdict_parse(reply, value):
    assert parse_verdict(reply) is value


@pytest.mark.parametrize("reply", [
    "", "yes", "Supported, mostly", "Probably supported, it sounds right.", "SUPPORTED NOT_SUPPORTED",
    "It is not supported", "A",
])
def test_verdict_unreadable(reply):
    with pytest.raises(ParseError):
        parse_verdict(reply)


def test_render_and_versions():
    split = DECOMPOSE.render({"question": "Q?", "context": "", "sentence": "She won."})[0]["content"]
    assert "Earlier sentences of the answer: (none)" in split and "<<<\nShe won.\n>>>" in split
    check = VERIFY.render({"claim": "X is Y.", "evidence": ["p1", " ", "p2"]})[0]["content"]
    assert "<<<\np1\n\np2\n>>>" in check and check.rstrip().endswith("NOT_SUPPORTED and nothing else.")
    with pytest.raises(KeyError, match="evidence"):
        VERIFY.render({"claim": "X", "evidence": []})
    with pytest.raises(KeyError, match="sentence"):
        DECOMPOSE.render({"question": "Q", "sentence": " "})
    assert (DECOMPOSE.name, DECOMPOSE.version, VERIFY.name, VERIFY.version) == (
        "forag_decompose", "1", "forag_verify", "1")
    assert VERIFY.max_tokens == 8
