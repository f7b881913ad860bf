"""`harness run method=binary_rar` end to end: the entry point is found, two GRPO steps train on
the tiny Llama against a store the test writes and the reference judge, and a leaderboard row is
recorded with the judge, evidence and retrieval among its components."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("factrl_binary_rar", reason="factrl-binary-rar is not installed: run `pip install -e "
                                                 "plugins/binary_rar` (make setup does)")
from tests.helpers import harness  # noqa: E402
from tests.method_readme import assert_listed  # noqa: E402
from tests.evidence_fixtures import build_test_store  # noqa: E402

ARTICLES = [{"title": "Marie Curie", "text": "Marie Curie was born in Warsaw. Marie Curie won two Nobel Prizes."},
            {"title": "Ulm", "text": "Albert Einstein was born in Ulm in 1879."}]
ROWS = [{"id": "q-curie", "question": "Where was Marie Curie born?", "answers": ["Warsaw"], "title": "Marie Curie"},
        {"id": "q-ulm", "question": "Where was Albert Einstein born?", "answers": ["Ulm"], "title": "Ulm"}]


def test_harness_methods_lists_the_plugin():
    assert_listed("binary_rar", "factrl-binary-rar")


@pytest.mark.slow  # a real `harness run` (train, evaluate, record): about 15 s on 2 idle cores
def test_two_steps_on_tiny_llama_record_a_row(tmp_path: Path):
    store_path = build_test_store(tmp_path, ARTICLES)
    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps(ROWS))
    lb = tmp_path / "lb.sqlite"
    result = harness("run", "method=binary_rar", "model=tiny-llama", "judge=reference", "evidence=file",
                     f"evidence.store={store_path}", "pool=file", f"pool.path={pool}", "pool.dedup_against=[]",
                     "eval.limit=2", f"output_dir={tmp_path / 'runs'}", f"leaderboard.store={lb}")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    run_dir = next((tmp_path / "runs").glob("*-binary_rar-tiny-llama-*"))
    log = [json.loads(line) for line in (run_dir / "train" / "log.jsonl").read_text().splitlines()]
    steps = [entry for entry in log if "rewards/binary_rar/judge_items" in entry]
    assert len(steps) == 2 and all(entry["rewards/binary_rar/judge_items"] > 0 for entry in steps)
    from factrl_binary_rar import DIAGNOSTIC_KEYS

    assert {f"rewards/binary_rar/{k}" for k in DIAGNOSTIC_KEYS} <= set(steps[0])
    info = json.loads((run_dir / "run.json").read_text())
    components = info["components"]
    assert {"judge", "evidence", "retrieval", "settings"} <= set(components)
    assert components["judge"]["paper_model"] == "Qwen/Qwen3-32B" and components["settings"]["top_k"] == 8
    assert components["optimizer"]["lr_scheduler"] == "linear" and components["optimizer"]["loss_type"] == "bnpo"
    assert {"judge", "retrieval"} <= set(info["stand_ins"])
    from factrl.leaderboard.store import Store

    rows = Store(lb).rows()
    assert len(rows) == 1 and rows[0]["method"]["name"] == "binary_rar"
