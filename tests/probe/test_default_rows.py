"""The rows `harness probe` scores when none are given: the pool's rows whose article the
evidence store holds first, so the evidence-based entries have the row's own sentences."""
from __future__ import annotations

from factrl.harness.engine.config import compose
from factrl.harness.probe import probe_method
from factrl.harness.probe.runner import _default_rows


def _cfg(pool_file, store_path, *extra):
    return compose(["method=rlfh", "model=tiny-llama", "pool=file", f"pool.path={pool_file}", "pool.shuffle_seed=null",
                    "pool.dedup_against=[]",
                    "evidence=file", f"evidence.store={store_path}", *extra])


def test_rows_with_evidence_come_first_and_none_is_dropped(pool_file, store_path):
    ids = [r["id"] for r in _default_rows(_cfg(pool_file, store_path))]
    assert ids == ["p2", "p3", "p4", "p5", "p1"]  # Paris has no article in the test store


def test_pool_evidence_only_set_either_way_keeps_the_pool_order(pool_file, store_path):
    assert [r["id"] for r in _default_rows(_cfg(pool_file, store_path, "+pool.evidence_only=false"))] == \
        ["p1", "p2", "p3", "p4", "p5"]
    assert [r["id"] for r in _default_rows(_cfg(pool_file, store_path, "+pool.evidence_only=true"))] == \
        ["p2", "p3", "p4", "p5"]


def test_a_one_question_probe_uses_a_row_with_evidence(pool_file, store_path, llama_tokenizer):
    result = probe_method(_cfg(pool_file, store_path), n=1, tokenizer=llama_tokenizer)
    assert result.questions == 1 and result.evidence_rows == 1
