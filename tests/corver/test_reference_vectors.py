"""CorVer's extractor prompt and reply parser against vectors recorded by running the released
code (shichengf/CorVer@f3cadc2, tests/reference_vectors/corver/extractor_parse.json): the
QuCo-RAG prompt filled as released, `parse_case`, and `extract_triplets_batch`'s post-processing."""
from __future__ import annotations

import pytest

from factrl.methods.corver.parsing import build_prompt, parse_triples, read_lists
from tests import refvec

CASES = refvec.cases("corver", "extractor_parse")
REPLIES = sorted(name for name, case in CASES.items() if "model_output" in case["input"])


@pytest.mark.parametrize("name", REPLIES)
def test_reply_is_read_as_released(name):
    case = CASES[name]
    reply = case["input"]["model_output"]
    assert read_lists(reply) == case["output"]["parse_case"]  # the bare parser (no label stripped)
    assert parse_triples(reply) == case["output"]["extract_triplets_batch"]  # what the reward gets


def test_prompt_is_the_released_quco_prompt_filled_as_released():
    case = CASES["prompt_fill"]
    prompt = build_prompt(case["input"]["sentence"])
    tail = case["output"]["prompt_tail"]
    assert prompt.endswith(tail)  # "...Your Task:\nSentence:<sentence>\nentities:\n", no newline after "Sentence:"
    assert prompt.startswith("Extract the knowledge triples that convey core semantic information")
    assert "return [[entity, relation]], because you don't know the answer" in prompt
    assert prompt.count("**Example ") == 14
