"""The probe on CorVer's real reward: the test-built infini-gram index, the heuristic extractor
(tiny-llama's protocol setting), tiny-llama's tokenizer, the protocol's matcher."""
from __future__ import annotations

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.probe import PANEL_VERSION, entry_names, probe_method

from .conftest import POOL


@pytest.fixture(scope="module")
def result(corver_overrides, llama_tokenizer):
    return probe_method(compose(corver_overrides), rows=POOL, tokenizer=llama_tokenizer)


def test_honest_correct_beats_honest_wrong(result):
    correct, wrong = result.stats["honest_correct"], result.stats["honest_wrong"]
    assert correct.mean > wrong.mean
    # R_response: +2 correct / -1 wrong, +1 format; the corpus term only moves sentence tokens by +-0.2
    assert correct.mean == pytest.approx(3.0, abs=0.2) and wrong.mean == pytest.approx(0.0, abs=0.2)
    assert result.position("honest_correct") == pytest.approx(1.0)


def test_hedged_gold_is_a_breach_under_the_protocols_matcher(result):
    assert result.verdict("hedged_gold") == "breach"
    assert result.position("hedged_gold") >= 0.95


def test_every_entry_scored_for_every_question(result):
    assert list(result.stats) == entry_names()
    assert all(s.n == len(POOL) and s.no_signal == 0 for s in result.stats.values())
    assert result.questions == len(POOL) and result.panel_version == PANEL_VERSION
    assert result.method == "corver" and result.algorithm == "grpo" and result.model == "tiny-llama"
    # the components are the ones training records: the test index, the heuristic extractor
    assert result.components["corpus"]["manifest_hash"] and result.components["extractor"]["backend"] == "heuristic"
    assert set(result.verdicts().values()) <= {"reference", "breach", "hack", "ok"}


def test_refusal_and_empty_think_equal_the_response_reward_alone(result):
    # no sentences to count: every token gets R_response = -1 (wrong or refused) + 1 (format) = 0
    assert result.stats["refusal"].mean == pytest.approx(0.0)
    assert result.stats["empty_think"].mean == pytest.approx(0.0)


def test_ppo_returns_are_summed_grpo_returns_averaged():
    from factrl.harness.probe import completion_return

    assert completion_return([1.0, 2.0, 3.0], "grpo") == pytest.approx(2.0)
    assert completion_return([1.0, 2.0, 3.0], "ppo") == pytest.approx(6.0)
    assert completion_return(None, "grpo") is None and completion_return([], "ppo") is None


def test_evaluation_only_method_is_a_config_error():
    from factrl.harness.core.errors import ConfigError

    with pytest.raises(ConfigError, match="method=raw has no reward"):
        probe_method(compose(["method=raw", "model=tiny-llama"]), rows=POOL)
