"""TruthRL's decision rules on plain strings: the release's normalisation, abstention, the order
of the checks, the judge's per-gold verdict and the reward values (hand-checked)."""
from __future__ import annotations

import pytest

truthrl = pytest.importorskip("factrl_truthrl", reason="factrl-truthrl is not installed: run `pip install -e "
                                                        "plugins/truthrl` (make setup does)")
from factrl_truthrl import scoring  # noqa: E402


@pytest.mark.parametrize("text, normalized", [
    ("I don't know", "i dont know"), ("The Warsaw!", "warsaw"), ("an apple a day", "apple day"),
    ("  Ulm,   Germany. ", "ulm germany"),
])
def test_release_normalisation_drops_punctuation_then_articles(text, normalized):
    assert scoring.release_normalize(text) == normalized


def test_released_abstention_is_containment_the_protocol_rule_is_the_exact_form():
    assert scoring.abstains("I don't know")
    assert scoring.abstains("Paris, but I don't know")  # contained: abstains as released
    assert scoring.abstains("I dont know")
    assert not scoring.abstains("I do not know")  # "i do not know" does not contain "i dont know"
    assert scoring.abstains("I do not know", "protocol") and scoring.abstains("I don't know.", "protocol")
    assert not scoring.abstains("Paris, but I don't know", "protocol")
    with pytest.raises(ValueError, match="abstention='any'"):
        scoring.abstains("x", "any")


def test_the_decisions_come_in_the_releases_order():
    golds = ["Warsaw", "Warszawa"]
    assert scoring.first_decision(None, golds) == scoring.NO_ANSWER
    assert scoring.first_decision("I don't know, maybe Warsaw", golds) == scoring.ABSTAIN  # before the match
    assert scoring.first_decision("invalid question", golds) == scoring.INVALID
    assert scoring.first_decision("the warsaw.", golds) == scoring.EXACT
    assert scoring.first_decision("Warsaw, Poland", golds) == scoring.ASK  # not exact: the judge decides


def test_the_judges_answer_per_gold():
    assert scoring.judged_correct([0, 1], [True, True]) is True
    assert scoring.judged_correct([None, 1], [False, True]) is True  # an accepted gold decides, as released
    assert scoring.judged_correct([0, 0], [True, True]) is False
    assert scoring.judged_correct([0, None], [True, False]) is None  # undecided: no signal
    assert scoring.judged_correct([], []) is False


def test_verdicts_and_values():
    values = {"correct": 1.0, "abstain": 0.0, "wrong": -1.0}
    cases = [(scoring.EXACT, None, 1.0), (scoring.ABSTAIN, None, 0.0), (scoring.NO_ANSWER, None, -1.0),
             (scoring.INVALID, None, -1.0), (scoring.GUARDED, None, -1.0), (scoring.ASK, True, 1.0),
             (scoring.ASK, False, -1.0), (scoring.ASK, None, None)]
    for decision, judged, want in cases:
        assert scoring.reward_of(scoring.verdict(decision, judged), **values) == want, decision


def test_settings_are_typed_and_checked():
    from factrl.harness.core.errors import ConfigError

    method = truthrl.TruthRLMethod({"name": "truthrl", "abstain": "-1"})
    assert method.settings.abstain == -1.0 and method.settings.verifier == "judge"
    with pytest.raises(ConfigError, match=r"^method=truthrl: method.verfier: unknown key \(did you mean "
                                          r"method.verifier\?\)"):
        truthrl.TruthRLMethod({"name": "truthrl", "verfier": "exact"})
    with pytest.raises(ConfigError, match="wrong <= abstain <= correct"):
        truthrl.TruthRLMethod({"name": "truthrl", "abstain": 2.0})
    assert truthrl.TruthRLSettings.from_mapping(answer_guard="strict", abstention="protocol").guards == [
        "answer_guard=strict", "abstention=protocol"]
