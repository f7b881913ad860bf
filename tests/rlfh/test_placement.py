"""Where RLFH's rewards land: upstream's labels_to_rewards outputs (tests/reference_vectors/rlfh/
rewards.json: token / sentence / paragraph granularity x the three constant sets, SmolLM2 ids)
reproduced through the reward's own alignment, echo location and scoring; then the echo guard
and the judged text of a tagged completion."""
from __future__ import annotations

import json

import pytest

from factrl.methods.rlfh import placement, scoring
from factrl.methods.rlfh.alignment import align_response
from factrl.methods.rlfh.settings import CONSTANTS, is_hedge

from .conftest import VECTORS

REWARDS = json.loads((VECTORS / "rewards.json").read_text(encoding="utf-8"))["cases"]


def echoes_of(labels, alignment, min_share=0.5):
    judged = placement.judged_text(alignment)
    out = []
    for echo_text, statements in labels:
        echo = scoring.Echo(echo_text, [scoring.Statement(s, verdict=v.lower(), score=int(sc))
                                        for s, (v, sc) in statements], hedged=is_hedge(echo_text))
        assert scoring.place(echo, judged, alignment, min_share), echo_text
        out.append(echo)
    return out


@pytest.mark.parametrize("case", REWARDS, ids=lambda c: c["name"])
def test_rewards_are_the_released_ones(case, tokenizer):
    i, expected = case["input"], case["output"]["rewards"]
    table = CONSTANTS[i["constants"]]
    assert table.verdict == {k.lower(): v for k, v in i["verification_map"].items() if "Hedged" not in k}
    assert table.info == {int(k): v for k, v in i["informative_map"].items()}
    assert (table.w_truth, table.w_info, table.eps, table.mu) == (i["truth_weight"], i["info_weight"], i["epsilon"], i["mu"])
    alignment = align_response(tokenizer, i["token_ids"], splitter="reference")
    assert alignment.text == i["response"]
    out = scoring.score(echoes_of(i["labels"], alignment), alignment.spans, len(i["token_ids"]), table,
                        granularity=i["granularity"])
    assert out.rewards == pytest.approx(expected, abs=1e-12)


def test_an_echo_the_response_does_not_hold_is_refused(tokenizer):
    text = "Paris is the capital of France. It has many museums."
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    judged = placement.judged_text(align_response(tokenizer, ids, splitter="reference"))
    assert placement.locate("Paris, capital of France.", judged.text, 0.5) is not None  # a paraphrase (19 of 25)
    assert placement.locate("Berlin hosts the Bundestag.", judged.text, 0.5) is None  # the release: anywhere
    assert placement.locate("It has many museums.", judged.text, 1.0) == list(range(32, 52))


def test_ties_pick_the_first_run_as_pylcs_does():
    # pylcs.lcs_string_idx: the earliest maximal run in the echo, then in the text (checked
    # against pylcs 0.1.1 on random strings; the values below are what pylcs and utils.py:20-27 give)
    assert placement.lcs_substring_idx("abXcd", "cd ab") == [3, 4, -1, -1, -1]
    assert placement.lcs_substring_idx("It is big.", "It is big. It is big.") == list(range(10))
    assert placement.lcs_sequence_idx("abc", "aabbcc") == [1, 2, 4]  # later matches moved to their earliest occurrences


def test_judged_text_drops_tags_and_maps_back(tokenizer):
    completion = "<think>Marie Curie was born in Warsaw. She won two Nobel Prizes.</think><answer>Warsaw</answer>"
    ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    alignment = align_response(tokenizer, ids, splitter="reference")
    judged = placement.judged_text(alignment)
    assert judged.text == "Marie Curie was born in Warsaw. She won two Nobel Prizes.\nWarsaw"
    for position, char in enumerate(judged.text):
        if char != "\n":
            assert alignment.text[judged.to_alignment(position)] == char
    echo = scoring.Echo("She won two Nobel Prizes.", [scoring.Statement("Marie Curie won two Nobel Prizes.", "correct", 4)])
    assert scoring.place(echo, judged, alignment, 0.5)
    assert alignment.text[echo.end] == "." and echo.sentence == 1
    char = echo.statements[0].char  # the LCS ends on the "s" of "Prizes" (final "." dropped)
    assert alignment.text[char - 5:char + 1] == "Prizes"
    assert alignment.spans[placement.token_for(alignment.spans, char)][1] == char + 1
