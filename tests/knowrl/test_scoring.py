"""KnowRL's reward arithmetic on hand-made cases (docs/BASELINES.md §5.1): the +2 / +1 / -1 mapping,
the format rule, the supported fraction and FActScore's length penalty."""
from __future__ import annotations

import math

import pytest

from factrl.methods.knowrl import scoring as s

V1 = s.KnowRLSettings.from_mapping(variant="v1.0.0")


def test_grade_mapping_head_and_v1():
    assert [s.grade_reward(g) for g in ("A", "B", "C")] == [2.0, -1.0, 1.0]
    assert [s.grade_reward(g) for g in ("CORRECT", "incorrect", "NOT_ATTEMPTED", "not attempted")] == [2, -1, 1, 1]
    assert [s.grade_reward(g, V1) for g in ("A", "B", "C")] == [2.0, -1.0, -1.0]  # v1.0.0: NOT_ATTEMPTED -> -1
    assert s.parse_grade("D") is None and s.parse_grade(None) is None
    with pytest.raises(ValueError):
        s.grade_reward("maybe")


def test_format_rule():
    ok = ["<think>Paris is in France.</think><answer>Paris</answer>",
          "Paris is in France.</think>\n<answer> Paris </answer>\n",  # <think> prepended (the prompt's own tag)
          "<think>a</think>b</think><answer>x</answer>"]  # KnowRL's regex allows a stray close tag inside
    bad = ["<think></think><answer>Paris</answer>",  # empty think
           "<think>r</think><answer> </answer>",  # empty answer
           "<think>r</think><answer>Paris</answer> trailing",  # text after the answer block
           "<think>r <think>again</think><answer>Paris</answer>",  # nested think
           "<think>r</think><answer>a</answer><answer>b</answer>",  # two answer blocks
           "<think>r</think>",  # no answer block
           "<answer>Paris</answer>", ""]  # no think block ("<think>" + it has no </think>)
    assert [s.format_ok(c) for c in ok] == [True] * len(ok)
    assert [s.format_ok(c) for c in bad] == [False] * len(bad)


def test_answer_and_reasoning_extraction():
    assert s.answer_of("<think>r</think><answer> Paris </answer>") == "Paris"
    assert s.answer_of("<think>r</think><answer>Paris") == ""  # unclosed: missing, as KnowRL's regex
    assert s.answer_of("no tags") == ""
    assert s.reasoning_of("<think> Paris is in France. </think><answer>x</answer>") == "Paris is in France."
    assert s.reasoning_of("  Paris is in France.  ") == "Paris is in France."  # whole completion
    # no opening tag: the whole completion, as released; unless the prompt opened the think
    # block (response prefix "<think>"): then the text before </think>
    text = "Paris is in France.</think><answer>Paris</answer>"
    assert s.reasoning_of(text) == text
    assert s.reasoning_of(text, prefix="<think>") == "Paris is in France."


def test_length_penalty_and_supported_fraction():
    assert s.length_penalty(0) == 0.0
    assert s.length_penalty(11) == 1.0 and s.length_penalty(50) == 1.0  # n > gamma: none
    assert s.length_penalty(10) == pytest.approx(1.0)  # exp(1 - 10/10)
    assert s.length_penalty(5) == pytest.approx(math.exp(-1))  # exp(1 - 2)
    assert s.length_penalty(1) == pytest.approx(math.exp(-9))
    assert s.length_penalty(3, gamma=0) == 1.0  # gamma 0: off
    # 3 of 4 facts supported, n = 4: 0.75 * exp(1 - 2.5)
    assert s.fact_score([True, True, True, False]) == pytest.approx(0.75 * math.exp(-1.5))
    assert s.fact_score([True] * 12) == 1.0 and s.fact_score([False] * 12) == 0.0 and s.fact_score([]) == 0.0
    # v1.0.0: min(#supported / 15, 1), no length penalty
    assert s.fact_score([True] * 3 + [False], V1) == pytest.approx(3 / 15)
    assert s.fact_score([True] * 20, V1) == 1.0


def test_supported_is_any_passage_at_threshold():
    scores = [[0.1, 0.3, 0.0], [0.29, 0.2], [], [0.9]]
    assert s.supported_flags(scores) == [True, False, False, True]  # >= 0.3 on any passage; none -> unsupported
    assert s.supported_flags(scores, threshold=0.5) == [False, False, False, True]


def test_fact_term_applies_to_wrong_non_refusals():
    head = s.KnowRLSettings.from_mapping()
    assert s.gets_fact_term(-1.0, refused=False, settings=head)
    assert not s.gets_fact_term(-1.0, refused=True, settings=head)
    assert not s.gets_fact_term(2.0, refused=False, settings=head) and not s.gets_fact_term(1.0, False, head)
    assert s.gets_fact_term(-1.0, refused=True, settings=V1)  # v1.0.0: every -1
    # totals stay in [-2, 3]
    assert s.total(1.0, 2.0, None) == 3.0 and s.total(-1.0, -1.0, 0.0) == -2.0
    assert s.total(1.0, -1.0, s.fact_score([True] * 11)) == 1.0


def test_v1_pre_check():
    assert s.v1_skips_judge("London", ["Paris"])
    assert not s.v1_skips_judge("It is Paris, France", ["Paris"])
    assert not s.v1_skips_judge("1945", ["in 1944"])  # a gold with digits always goes to the judge


def test_settings_are_checked():
    assert s.KnowRLSettings.from_mapping({"threshold": 0.5, "variant": "v1.0.0"}).threshold == 0.5
    for bad in ({"variant": "v2"}, {"threshold": 2}, {"gamma": -1}, {"require_title": "yes"}):
        with pytest.raises(ValueError):
            s.KnowRLSettings.from_mapping(bad)
