"""RLCR against its release's recorded outputs (tests/reference_vectors/rlcr/, computed by running
damanimehul/RLCR@8904bed reward_fns.py on fixed completions outside this repository) and against
the paper's equation (paper_equations.json, labelled as such): every term and the weighted total
under `missing_confidence: released`, and the no-signal rule where the harness differs on purpose."""
from __future__ import annotations

import pytest

pytest.importorskip("factrl_rlcr", reason="factrl-rlcr is not installed: run `pip install -e plugins/rlcr` "
                                          "(make setup does)")
from factrl_rlcr import scoring  # noqa: E402
from factrl_rlcr.reward import RLCRReward, RLCRSettings  # noqa: E402
from tests import refvec  # noqa: E402

FUNCTIONS = refvec.load("rlcr", "reward_functions")


def _score(case, **settings):
    inp = case["input"]
    reward = RLCRReward(settings=RLCRSettings.from_mapping(format_pattern=inp["format_pattern"], **settings))
    row = {"id": case["name"], "question": "q", "answers": [inp["gold"]]}
    out = reward(completions=[inp["completion"]], completion_ids=[[1, 2]], rows=[row])
    return out, out.records[0]


@pytest.mark.parametrize("case", FUNCTIONS["cases"], ids=lambda c: c["name"])
def test_every_term_and_the_total_match_the_release(case):
    _, record = _score(case, missing_confidence="released")
    want = case["output"]
    got = record["terms"]
    assert got["format"] == want["format"] and got["accuracy"] == want["accuracy"]
    assert got["brier"] == pytest.approx(want["brier"], rel=1e-12, abs=1e-15)
    assert got["mean_confidence"] == pytest.approx(want["mean_confidence"])
    assert got["confidence_extreme"] == want["confidence_one_or_zero"]
    assert record["total"] == pytest.approx(want["total"], rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("case", FUNCTIONS["cases"], ids=lambda c: c["name"])
def test_by_default_a_completion_without_a_readable_confidence_has_no_signal(case):
    out, record = _score(case)
    stated = scoring.stated_confidence(case["input"]["completion"])
    if stated.problem is None:
        assert record["total"] == pytest.approx(case["output"]["total"], rel=1e-12, abs=1e-15)
    else:  # the release gives these a value (its format failure); here: no signal, with the reason
        assert out.token_returns == [None] and out.no_signal_reasons == [stated.problem]
        assert case["output"]["format"] == 0.0


def test_the_weights_are_the_releases():
    assert FUNCTIONS["weights"] == {"format": 0.5, "accuracy": 0.5, "brier": 0.5, "mean_confidence": 1e-6,
                                    "confidence_one_or_zero": 1e-6}
    s = RLCRSettings.from_mapping()
    assert (s.w_format, s.w_accuracy, s.w_brier, s.w_mean_confidence, s.w_confidence_extreme) == tuple(
        FUNCTIONS["weights"].values())


@pytest.mark.parametrize("case", refvec.load("rlcr", "exact_match")["cases"], ids=lambda c: c["name"])
def test_exact_match_is_the_releases(case):
    assert scoring.exact_match(case["input"]["prediction"], [case["input"]["gold"]]) is case["output"]


@pytest.mark.parametrize("case", refvec.load("rlcr", "paper_equations")["cases"], ids=lambda c: c["name"])
def test_the_papers_equation(case):
    """Paper vectors (the equation, not code): R = 1(correct) - (q - 1(correct))^2; the harness's reward
    with the paper's weights (accuracy 1, Brier 1, nothing else) is R + 1 on a well-formed completion."""
    inp = case["input"]
    assert scoring.paper_reward(inp["correct"], inp["confidence"]) == pytest.approx(case["output"])
    answer = "Warsaw" if inp["correct"] else "Paris"
    text = (f"<think>x</think><answer>{answer}</answer><analysis>y</analysis>"
            f"<confidence>{inp['confidence']}</confidence>")
    reward = RLCRReward(settings=RLCRSettings.from_mapping(w_format=0.0, w_accuracy=1.0, w_brier=1.0,
                                                           w_mean_confidence=0.0, w_confidence_extreme=0.0))
    out = reward(completions=[text], completion_ids=[[1]], rows=[{"id": "q", "question": "q", "answers": ["Warsaw"]}])
    assert out.token_returns[0][0] - 1.0 == pytest.approx(case["output"])
