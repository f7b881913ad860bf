"""Response-level rewards (docs/PROTOCOL.md §3): correctness against each row's own gold, format, length."""
from __future__ import annotations

from dataclasses import replace

import pytest

from factrl.harness.core.rewards import (ResponseRewardSettings, correctness_reward, format_reward, length_penalty,
                                    response_rewards)

ROWS = [
    {"question": "Capital of France?", "answers": ["Paris", "City of Light"], "title": "Paris"},
    {"question": "When did WW2 end?", "answers": ["1945"], "title": "World War II"},
    {"question": "Who wrote Hamlet?", "answers": ["William Shakespeare", "Shakespeare"], "title": "Hamlet"},
]


def wrap(answer: str, think: str = "Brief reasoning.") -> str:
    return f"<think>{think}</think><answer>{answer}</answer>"


def test_three_questions_each_judged_against_its_own_gold():
    # Q=3 questions, C=2 completions each, rows repeated per completion as the trainer passes them.
    rows = [ROWS[0], ROWS[0], ROWS[1], ROWS[1], ROWS[2], ROWS[2]]
    completions = [wrap("Paris"), wrap("1945"),            # right for Q1 / Q2's answer for Q1
                   wrap("It ended in 1945."), wrap("Paris"),  # right for Q2 / Q1's answer for Q2
                   wrap("Shakespeare"), wrap("city of light")]  # alias for Q3 / Q1's alias for Q3
    assert correctness_reward(completions=completions, rows=rows) == [2.0, -1.0, 2.0, -1.0, 2.0, -1.0]
    out = response_rewards(completions=completions, rows=rows)
    assert out.total == [3.0, 0.0, 3.0, 0.0, 3.0, 0.0]  # lambda_j * correctness + lambda_f * format


def test_wrong_refused_empty_and_substring_traps():
    rows = [ROWS[1]] * 6 + [ROWS[0]]
    completions = [wrap("I don't know"), wrap(""), "no tags at all", wrap("1"), wrap("in 1946"),
                   wrap("e"), wrap("e")]
    out = response_rewards(completions=completions, rows=rows)
    assert out.correctness == [-1.0] * 7  # refusal, empty, missing, "1" vs "1945", wrong, "e"
    assert out.refused == [True, False, False, False, False, False, False]
    assert out.empty == [False, True, True, False, False, False, False]
    # A refusal in a proper block is well formatted (the released rule punished it).
    assert out.format == [1.0, -1.0, -1.0, 1.0, 1.0, 1.0, 1.0]


def test_format_rules_and_truncation():
    completions = ["<think>x</think><answer>Paris", wrap("Paris") + "<answer>Paris</answer>", wrap("  ")]
    assert format_reward(completions=completions) == [-1.0, 1.0, -1.0]
    assert format_reward(completions=completions, rule="single_block") == [-1.0, -1.0, -1.0]
    with pytest.raises(ValueError):
        replace(ResponseRewardSettings.from_mapping(), format_rule="lenient")


def test_weights_and_length_penalty():
    ids = [[1] * 100, [1] * 300, [1] * 50]
    assert length_penalty(completion_ids=ids) == [0.0, 0.0, 0.0]  # off unless configured
    assert length_penalty(completion_ids=ids, eta=0.5, l0=200) == pytest.approx([0.0, 0.25, 0.0])
    cfg = ResponseRewardSettings.from_mapping(lambda_j=2.0, lambda_f=0.5, length_eta=0.5, length_l0=200)
    completions = [wrap("Paris"), wrap("London"), "garbage"]
    out = response_rewards(completions=completions, rows=[ROWS[0]] * 3, completion_ids=ids, config=cfg)
    assert out.total == pytest.approx([2 * 2 + 0.5 * 1, 2 * -1 + 0.5 * (1 - 0.25), 2 * -1 + 0.5 * -1])
    with pytest.raises(ValueError, match="completion_ids"):
        response_rewards(completions=completions, rows=[ROWS[0]] * 3, config=cfg)


def test_a2_lambda_j_zero_keeps_only_format():
    cfg = ResponseRewardSettings.from_mapping({"lambda_j": 0})
    out = response_rewards(completions=[wrap("Paris"), wrap("London")], rows=[ROWS[0]] * 2, config=cfg)
    assert out.total == [1.0, 1.0]


def test_contract_errors_and_diagnostics():
    with pytest.raises(ValueError, match="rows"):
        correctness_reward(completions=[wrap("x")] * 2, rows=[ROWS[0]])
    with pytest.raises(KeyError):
        correctness_reward(completions=[wrap("x")], rows=[{"question": "q"}])
    out = response_rewards(completions=[wrap("Paris"), wrap("I don't know")], rows=[ROWS[0]] * 2)
    diag = out.diagnostics()
    assert diag["correct_rate"] == 0.5 and diag["refusal_rate"] == 0.5 and diag["format_rate"] == 1.0
    assert set(diag) >= {"correctness_mean", "empty_rate", "length_penalty_mean", "response_mean"}
