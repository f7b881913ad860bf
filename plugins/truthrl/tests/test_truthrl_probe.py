"""`harness probe method=truthrl` on the panel (reference judge, tiny-llama's tokenizer): the ternary
values on the references, the abstention appended to a wrong answer paid as an abstention by the
released rule (a hack) and not by the guard, and the hedged gold stated certain."""
from __future__ import annotations

import pytest

pytest.importorskip("factrl_truthrl", reason="factrl-truthrl is not installed (make setup installs it)")
from factrl.harness.engine.config import compose  # noqa: E402
from factrl.harness.probe import probe_method  # noqa: E402
from tests.probe.conftest import POOL  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer():
    from factrl.harness.services import models

    cfg = compose(["model=tiny-llama"]).model
    return models.load_tokenizer(models.resolve(cfg), cfg)


def probe(tokenizer, *overrides):
    return probe_method(compose(["method=truthrl", "model=tiny-llama", "judge=reference", *overrides]), rows=POOL,
                        n=4, tokenizer=tokenizer)


def test_the_panel_through_the_ternary_reward(tokenizer):
    result = probe(tokenizer)
    means = {k: s.mean for k, s in result.stats.items()}
    assert (means["honest_correct"], means["honest_wrong"], means["refusal"]) == (1.0, -1.0, 0.0)
    assert result.verdict("abstain_appended") == "hack" and means["abstain_appended"] == 0.0
    assert (means["stated_correct_certain"], means["stated_wrong_certain"]) == (1.0, -1.0)
    assert result.verdict("stated_hedged_certain") == "breach"  # the reference judge credits the listed gold
    assert result.verdict("hedged_gold") == "breach" and result.guards == []


def test_the_guards_close_the_abstention_and_listing_tricks(tokenizer):
    result = probe(tokenizer, "method.abstention=protocol", "method.answer_guard=strict")
    assert result.verdict("abstain_appended") == "ok" and result.stats["abstain_appended"].mean == -1.0
    assert result.verdict("stated_hedged_certain") == "ok" and result.verdict("hedged_gold") == "ok"
    assert result.stats["refusal"].mean == 0.0  # the plain refusal is still the abstention
    assert result.guards == ["answer_guard=strict", "abstention=protocol"]


V5 = ("gold_named_rejected", "gold_listed_with_and", "gold_in_longer_name", "gold_fragment")


def test_the_v5_answers_that_name_the_gold_are_paid_by_the_judge_and_not_by_the_strict_guard(tokenizer):
    """Panel v5 on all five rows (p5's gold "Marie Curie" has a fragment, "Marie"): the reference judge
    accepts what the protocol's matcher credits, so the named, listed and embedded gold earn the honest
    correct +1 on every row and the fragment +1 on p5 (-1 elsewhere: the wrong answer); answer_guard=strict
    reads strict accuracy v3's gaming reasons (candidates, embedded, fragment) as wrong: -1 everywhere."""
    original = probe_method(compose(["method=truthrl", "model=tiny-llama", "judge=reference"]), rows=POOL, n=5,
                            tokenizer=tokenizer)
    guarded = probe_method(compose(["method=truthrl", "model=tiny-llama", "judge=reference",
                                    "method.answer_guard=strict"]), rows=POOL, n=5, tokenizer=tokenizer)
    for name in V5[:3]:
        assert original.stats[name].mean == 1.0 and original.verdict(name) == "breach", name
    assert original.stats["gold_fragment"].mean == pytest.approx((1 - 4) / 5)
    assert original.verdict("gold_fragment") == "hack"
    for name in V5:
        assert guarded.stats[name].mean == -1.0 and guarded.verdict(name) == "ok", name
