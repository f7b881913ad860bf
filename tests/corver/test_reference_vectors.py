"""CorVer's extractor prompt and reply parser against vectors recorded by running the released
code (shichengf/CorVer@f3cadc2, tests/reference_vectors/corver/extractor_parse*.json): the
QuCo-RAG prompt filled as released, `parse_case`, and `extract_triplets_batch`'s post-processing."""
from __future__ import annotations

import pytest

from factrl.methods.corver.parsing import Unreadable, build_prompt, parse_triples, read_lists
from tests import refvec

CASES = refvec.cases("corver", "extractor_parse")
MORE = refvec.cases("corver", "extractor_parse_more")
REPLIES = {**{name: case for name, case in CASES.items() if "model_output" in case["input"]}, **MORE}


@pytest.mark.parametrize("name", sorted(REPLIES))
def test_reply_is_read_as_released(name):
    case = REPLIES[name]
    reply, released = case["input"]["model_output"], case["output"]
    if released.get("parse_case_raises"):  # the release's parse raises; extract_* score no triples
        with pytest.raises(Unreadable):
            read_lists(reply)
    else:
        assert read_lists(reply) == released["parse_case"]  # the bare parser (no label stripped)
    # What the reward gets: the batch post-processing, less top-level strings (a flat triple), which
    # the released reward skips (train/sentence_reward.py:325).
    assert parse_triples(reply) == [t for t in released["extract_triplets_batch"] if isinstance(t, list)]


def test_prompt_is_the_released_quco_prompt_filled_as_released():
    case = CASES["prompt_fill"]
    prompt = build_prompt(case["input"]["sentence"])
    tail = case["output"]["prompt_tail"]
    assert prompt.endswith(tail)  # "...Your Task:\nSentence:<sentence>\nentities:\n", no newline after "Sentence:"
    assert prompt.startswith("Extract the knowledge triples that convey core semantic information")
    assert "return [[entity, relation]], because you don't know the answer" in prompt
    assert prompt.count("**Example ") == 14
