"""Binary RAR against its release's recorded outputs (tests/reference_vectors/binary_rar/, computed by
running chentong0/rl-binary-rar@d97ea69's verifier on fixed inputs outside this repository): the
verifier prompt as sent, the response that is verified, and the reading of the verifier's reply,
with the replies the harness refuses to score on purpose (README, Fidelity)."""
from __future__ import annotations

import re

import pytest

pytest.importorskip("factrl_binary_rar", reason="factrl-binary-rar is not installed: run `pip install -e "
                                                 "plugins/binary_rar` (make setup does)")
from factrl.harness.services.judge import MATERIAL_RULE, ParseError  # noqa: E402
from factrl_binary_rar.prompts import documents_text, parse_score, render  # noqa: E402
from factrl_binary_rar.reward import response_of  # noqa: E402
from tests import refvec  # noqa: E402

# The release scores these 0.0 (an exception or no SCORE) or SCORE itself (2.0, 0.5): here they are
# re-asked and then a failed item, no signal, never a value.
REFUSED = {"missing_score", "score_2", "score_float", "not_json", "score_word", "empty", "prose_then_json"}


@pytest.mark.parametrize("case", refvec.load("binary_rar", "verify")["cases"], ids=lambda c: c["name"])
def test_the_verifier_reply_reads_as_released(case):
    if case["name"] in REFUSED:
        with pytest.raises(ParseError):
            parse_score(case["input"])
    else:
        assert case["output"] in (0.0, 1.0) and parse_score(case["input"]) == case["output"]


def test_every_released_outcome_is_covered():
    names = {c["name"] for c in refvec.load("binary_rar", "verify")["cases"]}
    assert REFUSED < names and len(names - REFUSED) == 5


def test_the_prompt_is_the_releases_but_for_the_material_block():
    case = refvec.load("binary_rar", "verifier_prompt")["cases"][0]
    inp, want = case["input"], case["output"]
    assert documents_text(inp["documents"]) == want["documents_text"]
    sent = render(inp)[0]["content"]
    unwrapped = re.sub(r'<material-[0-9a-f]{12} label="response">(.*?)</material-[0-9a-f]{12}>', r"\1", sent, flags=re.S)
    assert unwrapped.replace(MATERIAL_RULE + "\n", "", 1) == want["message"]


@pytest.mark.parametrize("case", refvec.load("binary_rar", "content_split")["cases"], ids=lambda c: c["name"])
def test_the_verified_response_is_the_releases(case):
    assert response_of(case["input"]) == case["output"]["content"]
