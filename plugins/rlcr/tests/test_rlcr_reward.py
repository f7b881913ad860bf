"""RLCR's reward on constructed completions: the stated-confidence rule (a missing or malformed
confidence is no signal, never a value), the five terms and weights, the correctness rules, the
released option, and the reward contract as the training engine checks it."""
from __future__ import annotations

import contextlib

import pytest

rlcr = pytest.importorskip("factrl_rlcr", reason="factrl-rlcr is not installed: run `pip install -e plugins/rlcr` "
                                                 "(make setup does)")
from factrl_rlcr import scoring  # noqa: E402
from factrl_rlcr.reward import DIAGNOSTIC_KEYS, RLCRReward, RLCRSettings  # noqa: E402

ROW = {"id": "q-curie", "question": "Where was Marie Curie born?", "answers": ["Warsaw", "Warszawa"]}


def tabc(answer: str, confidence: str, analysis: str = "I am fairly sure.") -> str:
    return (f"<think>I recall the answer.</think><answer>{answer}</answer> <analysis>{analysis}</analysis> "
            f"<confidence>{confidence}</confidence>")


def run(texts, **settings):
    reward = RLCRReward(settings=RLCRSettings.from_mapping(**settings))
    out = reward(completions=texts, completion_ids=[[1, 2, 3]] * len(texts), rows=[ROW] * len(texts))
    return [None if r is None else r[0] for r in out.token_returns], out


@pytest.mark.parametrize("text, value, problem", [
    ("<confidence>0.8</confidence>", 0.8, None), ("<confidence> 1 </confidence>", 1.0, None),
    ("<confidence>0</confidence>", 0.0, None), ("<confidence>1e-1</confidence>", 0.1, None),
    ("no block", None, "no_confidence"), ("<confidence></confidence>", None, "no_confidence"),
    ("<confidence>  </confidence>", None, "no_confidence"), ("<confidence>90%</confidence>", None, "bad_confidence"),
    ("<confidence>high</confidence>", None, "bad_confidence"), ("<confidence>1.5</confidence>", None, "bad_confidence"),
    ("<confidence>-0.1</confidence>", None, "bad_confidence"), ("<confidence>nan</confidence>", None, "bad_confidence"),
    ("<confidence>0.2</confidence> then <confidence>0.9</confidence>", 0.9, None),  # the last block, as released
])
def test_the_stated_confidence_rule(text, value, problem):
    stated = scoring.stated_confidence(text)
    assert stated.value == (pytest.approx(value) if value is not None else None) and stated.problem == problem


def test_the_weighted_terms_by_hand():
    values, out = run([tabc("Warsaw", "0.9"), tabc("Paris", "0.9"), tabc("Warsaw", "0.3"), tabc("Paris", "0")])
    # 0.5 format + 0.5 accuracy + 0.5 (1 - (acc - q)^2) + 1e-6 q + 1e-6 [q in {0, 1}]
    assert values == pytest.approx([0.5 + 0.5 + 0.5 * 0.99 + 0.9e-6, 0.5 + 0.5 * 0.19 + 0.9e-6,
                                    0.5 + 0.5 + 0.5 * 0.51 + 0.3e-6, 0.5 + 0.5 * 1.0 + 1e-6])
    assert tuple(out.diagnostics) == DIAGNOSTIC_KEYS
    assert out.diagnostics["correct_rate"] == 0.5 and out.diagnostics["stated_rate"] == 1.0
    assert out.diagnostics["brier_mean"] == pytest.approx((0.01 + 0.81 + 0.49 + 0.0) / 4)
    assert out.no_signal_reasons == [None] * 4


def test_a_missing_or_malformed_confidence_is_no_signal_never_a_value():
    texts = ["<think>x</think><answer>Warsaw</answer>", tabc("Warsaw", "90%"), tabc("Warsaw", ""),
             tabc("Warsaw", "0.7")]
    values, out = run(texts)
    assert values[:3] == [None, None, None] and values[3] is not None
    assert out.no_signal_reasons == ["no_confidence", "bad_confidence", "no_confidence", None]
    assert out.diagnostics["no_confidence_rate"] == 0.5 and out.diagnostics["bad_confidence_rate"] == 0.25
    # released: the release's format failure, only the 1e-6 terms (90% reads as 0.0, so its extreme term is 1)
    released, _ = run(texts, missing_confidence="released")
    assert released[:3] == pytest.approx([0.0, 1e-6, 0.0]) and released[3] == pytest.approx(values[3])
    assert max(released[:3]) < 0.5  # never above a well-formed completion (its minimum: 0.5, wrong and certain)


def test_the_format_gate_is_the_releases():
    no_analysis = "<think>x</think><answer>Warsaw</answer><confidence>0.9</confidence>"
    values, out = run([no_analysis, tabc("Warsaw", "0.9") + " trailing words"])
    assert values == pytest.approx([0.9e-6, 0.9e-6]) and out.records[0]["format"] is False
    tac, _ = run([no_analysis], format_pattern="tac")
    assert tac == pytest.approx([0.5 + 0.5 + 0.5 * 0.99 + 0.9e-6])


def test_correctness_rules_and_the_strict_guard():
    texts = [tabc("the warsaw.", "1"), tabc("Warsaw, Poland", "1"), tabc("Paris or Warsaw", "1")]
    exact, _ = run(texts)
    matcher, _ = run(texts, correctness="matcher")
    strict, _ = run(texts, correctness="strict")
    top, bottom = 1.5 + 2e-6, 0.5 + 2e-6
    assert exact == pytest.approx([top, bottom, bottom])
    assert matcher == pytest.approx([top, top, top])  # the matcher credits the listed gold
    assert strict == pytest.approx([top, top, bottom])  # strict accuracy does not
    assert RLCRSettings.from_mapping(correctness="strict").guards == ["correctness=strict"]


def test_the_strict_guard_withdraws_an_embedded_gold_and_a_fragment():
    """Strict accuracy v3: the gold followed by words that make another name (`embedded`) and part of
    a multi-word gold (`fragment`) are credited by the protocol's matcher, not by the strict guard."""
    polonium = {"id": "q-polonium", "question": "Who discovered polonium with Pierre Curie?", "answers": ["Marie Curie"]}
    texts = [tabc("Warsaw Memorial Stadium", "1"), tabc("Marie", "1"), tabc("Marie Curie", "1")]
    rows = [ROW, polonium, polonium]
    top, bottom = 1.5 + 2e-6, 0.5 + 2e-6
    got = {}
    for rule in ("matcher", "strict"):
        reward = RLCRReward(settings=RLCRSettings.from_mapping(correctness=rule))
        out = reward(completions=texts, completion_ids=[[1, 2, 3]] * 3, rows=rows)
        got[rule] = [r[0] for r in out.token_returns]
    assert got["matcher"] == pytest.approx([top, top, top])
    assert got["strict"] == pytest.approx([bottom, bottom, top])


def test_the_paper_reward_is_an_affine_image_of_the_released_sum():
    """For a well-formed completion, 0.5 format + 0.5 acc + 0.5 (1 - Brier) = 1 + R_paper / 2."""
    for answer, q in [("Warsaw", 0.9), ("Paris", 0.9), ("Warsaw", 0.0), ("Paris", 0.25)]:
        value, _ = run([tabc(answer, str(q))], w_mean_confidence=0.0, w_confidence_extreme=0.0)
        assert value[0] == pytest.approx(1 + scoring.paper_reward(answer == "Warsaw", q) / 2)


def test_settings_are_typed_and_checked():
    from factrl.harness.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"method.missing_confidence='zero': choose one of"):
        rlcr.RLCRMethod({"name": "rlcr", "missing_confidence": "zero"})
    with pytest.raises(ConfigError, match=r"method.w_brier=-1"):
        rlcr.RLCRMethod({"name": "rlcr", "w_brier": -1})


def test_the_engines_reward_contract_holds(tmp_path):
    from factrl.harness.training.token_reward import _TokenReward

    reward = RLCRReward(prefix="<think>")
    adapter = _TokenReward(reward, "rlcr", lambda name: contextlib.nullcontext(), tmp_path / "r.jsonl")
    texts = ["x</think><answer>Warsaw</answer><analysis>ok</analysis><confidence>1</confidence>", "noise", ""]
    means = adapter(prompts=["q"] * 3, completions=texts, completion_ids=[[1, 2], [3], []], id=["a"] * 3,
                    question=[ROW["question"]] * 3, answers=[ROW["answers"]] * 3, title=["t"] * 3)
    assert means[1:] == [None, None]  # no confidence stated; an empty completion carries no signal
    assert means[0] == pytest.approx(1.5 + 2e-6)
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 3
