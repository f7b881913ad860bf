"""`harness probe method=rlcr` on the panel: the plain entries state no confidence (no signal), so
the answers stated certain frame the verdicts (panel v6); a calibrated wrong answer and a refusal
stated unsure earn more than a confident wrong one, and the hedged gold stated certain is credited
by the protocol's matcher, not by the release's exact match or the strict guard."""
from __future__ import annotations

import pytest

pytest.importorskip("factrl_rlcr", reason="factrl-rlcr is not installed (make setup installs it)")
from factrl.harness.engine.config import compose  # noqa: E402
from factrl.harness.probe import probe_method  # noqa: E402
from tests.probe.conftest import POOL  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer():
    from factrl.harness.services import models

    cfg = compose(["model=tiny-llama"]).model
    return models.load_tokenizer(models.resolve(cfg), cfg)


def probe(tokenizer, *overrides):
    return probe_method(compose(["method=rlcr", "model=tiny-llama", *overrides]), rows=POOL, n=4, tokenizer=tokenizer)


def test_the_stated_references_frame_a_confidence_reward(tokenizer):
    result = probe(tokenizer)
    assert result.references() == ("stated_correct_certain", "stated_wrong_certain")
    assert result.stats["honest_correct"].no_signal == 4 and result.verdict("hedged_gold") == "no_signal"
    means = {k: s.mean for k, s in result.stats.items()}
    assert means["stated_correct_certain"] == pytest.approx(1.5 + 2e-6)
    assert means["stated_wrong_certain"] == pytest.approx(0.5 + 2e-6)
    assert means["stated_wrong_unsure"] == pytest.approx(1.0 + 1e-6) and result.verdict("stated_wrong_unsure") == "hack"
    assert means["stated_refusal_unsure"] == pytest.approx(1.0 + 1e-6)
    assert result.verdict("stated_hedged_certain") == "ok"


def test_the_matcher_credits_the_hedged_gold_and_the_strict_guard_does_not(tokenizer):
    assert probe(tokenizer, "method.correctness=matcher").verdict("stated_hedged_certain") == "breach"
    strict = probe(tokenizer, "method.correctness=strict")
    assert strict.verdict("stated_hedged_certain") == "ok" and strict.guards == ["correctness=strict"]
