"""Results files (lm-evaluation-harness-like): export, import, and refusal of edited files."""
from __future__ import annotations

import json

import pytest

from factrl.harness.core.errors import DataError
from factrl.leaderboard import Store, export_results, record_run, rows_from_results
from factrl.leaderboard.store import versions
from factrl.leaderboard.store import strip_private
from factrl.leaderboard.testing import make_run_dir

TRAIN = {"init": 1, "rollout": 10, "reward": 5, "update": 4, "save": 1}


def exported(runs, store_path) -> dict:
    run = make_run_dir(runs, scores={"triviaqa": 0.6, "hotpotqa": {"em": 0.2, "f1": 0.3}}, train_phases=TRAIN)
    record_run(run, store_path)
    return export_results([strip_private(r) for r in Store(store_path).rows()])


def test_export_reads_like_lm_eval(runs, store_path):
    data = exported(runs, store_path)
    assert data["results"]["triviaqa"]["accuracy,none"] == 0.6
    assert isinstance(data["results"]["triviaqa"]["accuracy_stderr,none"], float)
    assert data["results"]["hotpotqa"]["em_stderr,none"] == "N/A"
    assert data["n-samples"]["triviaqa"] == {"original": 17944, "effective": 17944}
    assert data["higher_is_better"]["triviaqa"]["accuracy"] is True
    assert data["config"]["model"] == "hf" and data["config"]["model_args"].startswith("pretrained=org/qwen3-4b")
    assert data["task_hashes"]["triviaqa"] and data["versions"]["triviaqa"] == "1"
    assert isinstance(data["date"], float) and data["model_name"] == "org/qwen3-4b"
    json.dumps(data)  # plain JSON


def test_round_trip_into_another_store(runs, store_path, tmp_path):
    data = exported(runs, store_path)
    other = tmp_path / "other.sqlite"
    rows = rows_from_results(json.loads(json.dumps(data)), "results.json")
    Store(other).add(rows)
    mine = {r["row_id"]: strip_private(r) for r in Store(store_path).rows()}
    theirs = {r["row_id"]: strip_private(r) for r in Store(other).rows()}
    assert mine.keys() == theirs.keys()
    for rid, row in theirs.items():
        assert row["source"].startswith("import:results.json (run:")
        assert {k: v for k, v in row.items() if k != "source"} == {k: v for k, v in mine[rid].items() if k != "source"}


def test_edited_or_foreign_files_are_refused(runs, store_path, monkeypatch):
    data = exported(runs, store_path)
    edited = json.loads(json.dumps(data))
    edited["results"]["triviaqa"]["accuracy,none"] = 0.99
    with pytest.raises(DataError, match="the file was edited"):
        rows_from_results(edited, "r.json")
    edited = json.loads(json.dumps(data))
    edited["task_hashes"]["triviaqa"] = "0" * 64
    with pytest.raises(DataError, match="task_hashes.triviaqa"):
        rows_from_results(edited, "r.json")
    edited = json.loads(json.dumps(data))
    index = next(i for i, r in enumerate(edited["factrl"]["rows"]) if r["set"]["name"] == "triviaqa")
    edited["factrl"]["rows"][index]["metrics"]["accuracy"]["value"] = "high"
    with pytest.raises(DataError, match=rf"factrl.rows\[{index}\].metrics.accuracy.value: must be number"):
        rows_from_results(edited, "r.json")
    lm_eval = {"results": {"truthfulqa_gen": {"alias": "truthfulqa_gen", "bleu_max,none": 1.0}}, "versions": {},
               "config": {"model": "hf"}, "git_hash": "abc", "date": 1.0}
    with pytest.raises(DataError, match="lacks the provenance"):
        rows_from_results(lm_eval, "lm_eval.json")
    monkeypatch.setitem(versions.VERSIONS, "2", {"date": "2026-12-01", "summary": "test", "prompt": {}})
    refiled = rows_from_results(json.loads(json.dumps(data)), "r.json", version="2")
    assert {r["leaderboard_version"] for r in refiled} == {"2"}
    assert not {r["row_id"] for r in refiled} & {r["row_id"] for r in data["factrl"]["rows"]}
