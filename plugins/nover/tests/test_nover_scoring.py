"""NOVER's arithmetic on hand-made perplexities: ranks, ties, efficiency, format, length rule."""
from __future__ import annotations

import math

import pytest

nover = pytest.importorskip("factrl_nover", reason="factrl-nover is not installed: run `pip install -e plugins/nover` "
                                                  "(make setup does)")


def test_rank_reward_lowest_perplexity_ranks_first():
    # P ascending: 1.2 (k=0), 1.5 (k=1), 3.0 (k=2), 9.0 (k=3); R_r = (n - k) / n.
    assert nover.rank_rewards([3.0, 1.2, 9.0, 1.5]) == [0.5, 1.0, 0.25, 0.75]


def test_rank_ties_released_get_distinct_ranks_in_order_or_share_the_better_rank():
    # released (default): a stable sort, so ties keep their input order (vector ties_in_P checks it).
    assert nover.rank_rewards([2.0, 1.0, 2.0, 4.0]) == [0.75, 1.0, 0.5, 0.25]
    assert nover.rank_rewards([1.5, 1.5, 1.5]) == [1.0, 2 / 3, 1 / 3]
    # shared (an option): k = how many are strictly lower.
    assert nover.rank_rewards([2.0, 1.0, 2.0, 4.0], "shared") == [0.75, 1.0, 0.75, 0.25]
    assert nover.rank_rewards([1.5, 1.5, 1.5], "shared") == [1.0, 1.0, 1.0]
    assert nover.rank_rewards([7.0]) == [1.0]  # one valid completion: R_r 1
    with pytest.raises(ValueError, match="rank_ties"):
        nover.rank_rewards([1.0], "random")


def test_efficiency_counts_others_beaten_on_both_length_and_perplexity():
    ppl = [1.0, 2.0, 3.0, 1.5]
    lengths = [10, 20, 30, 5]
    # 0 beats 1 and 2 (shorter and lower); 1 beats 2; 2 none; 3 beats 1 and 2 (not 0: P 1.5 > 1.0).
    assert nover.efficiency_rewards(ppl, lengths) == [2 / 3, 1 / 3, 0.0, 2 / 3]
    # "shorter" and "lower" are strict: equal length or equal P beats no one.
    assert nover.efficiency_rewards([1.0, 2.0], [10, 10]) == [0.0, 0.0]
    assert nover.efficiency_rewards([2.0, 2.0], [5, 10]) == [0.0, 0.0]
    assert nover.efficiency_rewards([1.0], [3]) == [0.0]  # one valid completion: R_e 0


def test_score_group_gates_reasoning_and_efficiency_on_format_and_applies_weights():
    valid = [True, False, True]
    scores = nover.score_group(valid, [2.0, None, 1.0], [8, None, 4])
    assert scores.format == [1.0, 0.0, 1.0]
    assert scores.reasoning == [0.5, 0.0, 1.0]  # ranked among the 2 valid ones only
    assert scores.efficiency == [0.0, 0.0, 1.0]
    assert scores.total == [1.5, 0.0, 3.0]
    weighted = nover.score_group(valid, [2.0, None, 1.0], [8, None, 4],
                                 nover.scoring.Weights(format=0.5, reasoning=2.0, efficiency=0.0))
    assert weighted.total == [0.5 + 1.0, 0.0, 0.5 + 2.0]
    assert nover.score_group([False, False], [None, None], [None, None]).total == [0.0, 0.0]


def test_length_rule_released_is_log10_paper_is_natural_log():
    assert nover.length_scale(100, "released") == pytest.approx(3.0)
    assert nover.length_scale(100, "paper") == pytest.approx(1 + math.log(100))
    assert nover.length_scale(1) == 1.0 and nover.length_scale(0) == 1.0
    p = nover.scoring.reasoning_perplexity(2.0, 100, "released")
    assert p == pytest.approx(math.exp(2.0 / 3.0))
    with pytest.raises(ValueError, match="length_rule"):
        nover.length_scale(5, "log2")


@pytest.mark.parametrize("text, ok", [
    ("<think>a b</think><answer>c</answer>", True),
    ("  <think>\na b\n</think>\n <answer> c </answer>\n", True),
    ("<think>a</think>", False),
    ("<answer>c</answer>", False),
    ("<think>a</think><answer>c</answer> trailing", False),
    ("lead <think>a</think><answer>c</answer>", False),
    ("<think>a<think>b</think><answer>c</answer>", False),
    ("<think>a</think><answer>c</answer><answer>d</answer>", False),
    ("<answer>c</answer><think>a</think>", False),
])
def test_strict_format(text, ok):
    assert (nover.parse_strict(text) is not None) is ok


def test_parse_strict_reports_reasoning_and_where_it_ends():
    text = "<think> r </think><answer>x</answer>"
    parsed = nover.parse_strict(text)
    assert parsed.reasoning == " r " and parsed.answer == "x" and text[:parsed.think_end].endswith("</think>")


def test_settings_are_typed_and_the_plugin_refuses_an_older_interface(monkeypatch):
    import importlib
    import sys

    from factrl.harness.core import method as interface
    from factrl.harness.core.errors import ConfigError

    assert nover.NoverMethod.settings_class is nover.NoverSettings
    assert nover.NoverMethod({"name": "nover", "proxy_keep": "0.5"}).settings.proxy_keep == 0.5
    with pytest.raises(ConfigError, match=r"^method=nover: method.proxy_kep: unknown key \(did you mean "
                                          r"method.proxy_keep\?\); valid: w_format, "):
        nover.NoverMethod({"name": "nover", "proxy_kep": 0.5})
    monkeypatch.setattr(interface, "INTERFACE_VERSION", 3)
    for name in [m for m in sys.modules if m == "factrl_nover" or m.startswith("factrl_nover.")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError, match=r"needs factrl-harness method interface version >= 4"):
        importlib.import_module("factrl_nover")
