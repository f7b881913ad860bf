"""`harness probe method=binary_rar` on the panel (reference judge, a store written here): the
reward never reads the gold, so a refusal contradicts nothing and reaches the honest correct answer."""
from __future__ import annotations

import pytest

pytest.importorskip("factrl_binary_rar", reason="factrl-binary-rar is not installed (make setup installs it)")
from factrl.harness.engine.config import compose  # noqa: E402
from factrl.harness.probe import probe_method  # noqa: E402
from tests.evidence_fixtures import build_test_store  # noqa: E402
from tests.knowrl.conftest import ARTICLES  # noqa: E402
from tests.probe.conftest import POOL  # noqa: E402


def test_the_panel_through_the_binary_reward(tmp_path):
    from factrl.harness.services import models

    store = build_test_store(tmp_path, ARTICLES)
    cfg = compose(["method=binary_rar", "model=tiny-llama", "judge=reference", "evidence=file",
                   f"evidence.store={store}"])
    tokenizer = models.load_tokenizer(models.resolve(cfg.model), cfg.model)
    result = probe_method(cfg, rows=POOL, n=4, tokenizer=tokenizer)
    # p1 (Paris) has no article in the store: no signal; Ulm and Warsaw are in their documents, p4's Vienna
    # is not in Curie's; the wrong answers (the next rows' golds) Warsaw and Vienna are absent, but p4's
    # wrong answer, Paris, is in Curie's article: supported, 1 (the reward never reads the gold)
    assert result.stats["honest_correct"].no_signal == 1 and result.stats["honest_correct"].mean == pytest.approx(2 / 3)
    assert result.stats["honest_wrong"].mean == pytest.approx(1 / 3)
    assert result.verdict("refusal") == "breach" and result.stats["refusal"].mean == 1.0
    assert result.verdict("stated_refusal_unsure") == "breach" and result.verdict("empty_think") == "ok"
    assert {"evidence", "retrieval"} <= set(result.components)
