"""The store: recording run directories, refusals with reasons, frozen fields, concurrency."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factrl.evals import SCORER_VERSION

from factrl.harness.core.errors import DataError, HarnessError
from factrl.leaderboard import LEADERBOARD_VERSION, RowRefused, Store, add_run, record_run, rows_from_run
from factrl.leaderboard.store import schema
from factrl.leaderboard.testing import make_run_dir

TRAIN = {"init": 10, "rollout": 100, "reward": 50, "update": 40, "save": 5}


def edit_metrics(run: Path, set_name: str, change) -> None:
    path = run / "eval" / set_name / "metrics.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_a_run_becomes_one_valid_row_per_set(runs, store_path):
    run = make_run_dir(runs, method="corver", scores={"triviaqa": 0.6, "truthfulqa": 0.4,
                                                      "hotpotqa": {"em": 0.2, "f1": 0.3}}, train_phases=TRAIN)
    ids = record_run(run, store_path)
    rows = Store(store_path).rows(LEADERBOARD_VERSION)
    assert sorted(ids) == sorted(r["row_id"] for r in rows) and len(rows) == 3
    row = next(r for r in rows if r["set"]["name"] == "triviaqa")
    assert not schema.errors({k: v for k, v in row.items() if k != "_recorded"}, schema.ROW_SCHEMA)
    assert row["method"]["name"] == "corver" and len(row["method"]["config_hash"]) == 8
    assert row["timer"]["total_s"] == 205 and row["steps"] == 100
    assert row["adapter"]["sha256"] and row["model"]["sha256"] and row["harness"]["git_commit"]
    assert row["set"]["sha256"] and row["scorer"] == {"name": "default", "version": SCORER_VERSION}
    assert row["generation"]["prompt_hash"] and row["generation"]["decoding"]["max_new_tokens"] == 1000
    assert row["metrics"]["accuracy"]["n"] == 17944 and row["source"].startswith("run:")
    raw = make_run_dir(runs, method="raw", scores={"triviaqa": 0.5})
    raw_row = rows_from_run(raw)[0]
    assert raw_row["timer"] is None and raw_row["pool"] is None and raw_row["adapter"] is None
    assert raw_row["steps"] is None


def test_evaluation_only_runs_are_labelled_by_what_was_evaluated(runs):
    def eval_run(adapter: bool, method: str) -> dict:
        run = make_run_dir(runs, method=method, model=f"m-{adapter}-{method}", scores={"triviaqa": 0.5},
                           adapter=adapter)
        info = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**info, "kind": "eval", "method": "eval"}))
        return rows_from_run(run)[0]

    # `harness eval` composes the root config, whose default method may be a trained one.
    assert eval_run(adapter=False, method="corver")["method"]["name"] == "raw"
    assert eval_run(adapter=True, method="fspo")["method"]["name"] == "fspo"
    with pytest.raises(HarnessError, match="evaluated an adapter but its method is 'raw'"):
        eval_run(adapter=True, method="raw")


def test_rerecording_is_a_no_op_and_a_change_needs_replace(runs, store_path):
    run = make_run_dir(runs, scores={"triviaqa": 0.3, "popqa": 0.2}, train_phases=TRAIN)
    first = add_run(run, store_path)
    assert sorted(first.added) == sorted(first.ids) and len(first.ids) == 2
    again = add_run(run, store_path)  # same content (only the recording date differs)
    assert again.ids == first.ids and again.unchanged == first.ids and not again.added + again.replaced
    # A re-add that would turn a stored 30% into 10% is refused, naming the change.
    edit_metrics(run, "triviaqa", lambda d: d["metrics"]["accuracy"].update(value=0.1))
    with pytest.raises(RowRefused, match=r"triviaqa: already stored .*metrics.accuracy.value 0.3 -> 0.1.*"
                                         r"--replace") as err:
        record_run(run, store_path)
    assert err.value.replaceable
    stored = {r["set"]["name"]: r for r in Store(store_path).rows()}
    assert stored["triviaqa"]["metrics"]["accuracy"]["value"] == 0.3  # all sets of a run or none
    done = add_run(run, store_path, replace=True)
    assert done.replaced == [stored["triviaqa"]["row_id"]] and done.unchanged == [stored["popqa"]["row_id"]]
    rows = Store(store_path).rows()
    assert len(rows) == 2
    assert next(r for r in rows if r["set"]["name"] == "triviaqa")["metrics"]["accuracy"]["value"] == 0.1


def test_an_input_with_the_same_row_twice_is_refused_naming_it(runs, store_path):
    rows = rows_from_run(make_run_dir(runs, scores={"triviaqa": 0.3, "popqa": 0.2}))
    twice = rows + [dict(rows[0])]
    name = rows[0]["set"]["name"]
    with pytest.raises(RowRefused, match=rf"/{name}: appears 2 times in this input \(identical copies\)"):
        Store(store_path).add(twice)
    changed = json.loads(json.dumps(rows[0]))
    changed["metrics"]["accuracy"]["value"] = 0.9
    with pytest.raises(RowRefused, match="appears 2 times in this input \\(with different content\\)"):
        Store(store_path).add(rows + [changed])
    assert not store_path.exists()


@pytest.mark.parametrize("change, reason", [
    (lambda d: d["metrics"]["accuracy"].update(value=57.8), "fraction"),
    (lambda d: d["metrics"]["accuracy"].update(n=100), "every question stays in the denominator"),
    (lambda d: d["metrics"].pop("accuracy"), "primary metric"),
    (lambda d: d["generation"].update(prompt_hash="0123456789abcdef"), "prompt"),
])
def test_invalid_rows_are_refused_with_the_reason_and_nothing_is_stored(runs, store_path, change, reason):
    run = make_run_dir(runs, scores={"triviaqa": 0.6, "popqa": 0.2}, train_phases=TRAIN)
    edit_metrics(run, "popqa", change)
    with pytest.raises(RowRefused, match=reason) as err:
        record_run(run, store_path)
    assert "popqa" in str(err.value)
    assert not store_path.exists() or Store(store_path).rows() == []  # all sets of a run or none


def test_a_malformed_metrics_file_names_file_and_field(runs, store_path):
    run = make_run_dir(runs, scores={"triviaqa": 0.6})
    edit_metrics(run, "triviaqa", lambda d: d["set"].pop("sha256"))
    with pytest.raises(DataError, match=r"triviaqa/metrics.json: set.sha256: missing"):
        record_run(run, store_path)
    edit_metrics(run, "triviaqa", lambda d: d["set"].update(sha256="abc123", task="quiz"))
    with pytest.raises(DataError, match=r"set.task: must be one of"):
        record_run(run, store_path)
    with pytest.raises(HarnessError, match="no eval/<set>/metrics.json"):
        record_run(make_run_dir(runs, scores={}), store_path)
    with pytest.raises(HarnessError, match="unknown leaderboard version '99'"):
        record_run(make_run_dir(runs, model="m2", scores={"popqa": 0.1}), store_path, version="99")


def test_frozen_fields_are_pinned_by_the_first_row_of_a_version(runs, store_path):
    record_run(make_run_dir(runs, model="qwen3-4b", scores={"triviaqa": 0.6}), store_path)
    other_set = make_run_dir(runs, model="qwen3-8b", scores={"triviaqa": 0.5})
    edit_metrics(other_set, "triviaqa", lambda d: d["set"].update(sha256="ab" * 32))
    with pytest.raises(RowRefused, match=r"set:triviaqa: set content \(sha256\) = abababababab, frozen .*"
                                          r"another store \(--store PATH\).*new leaderboard version") as err:
        record_run(other_set, store_path)
    assert [(f["field"], f["new"]) for f in err.value.frozen] == [("set content (sha256)", "ab" * 6)]
    subset = make_run_dir(runs, model="qwen3-8b", scores={"triviaqa": 0.5}, limit=100)
    with pytest.raises(RowRefused, match="set:triviaqa: eval.limit = 100, frozen null") as err:
        record_run(subset, store_path)
    # The limit is the cause; the kept records' count and hash follow from it and are not repeated.
    assert err.value.frozen_summary() == "eval.limit = 100, but version 1 of this store froze null (set triviaqa)"
    # The scorer version is frozen in versions.py itself, before any store pin.
    scorer = make_run_dir(runs, model="qwen3-8b", scores={"nq_open": 0.5}, scorer_version="2")
    with pytest.raises(RowRefused, match=f"scorer default version 2, version freezes {SCORER_VERSION}"):
        record_run(scorer, store_path)
    sampled = {"do_sample": True, "temperature": 0.6, "top_p": 0.95, "max_new_tokens": 1000}
    same_model = make_run_dir(runs, method="fspo", model="qwen3-4b", scores={"triviaqa": 0.5}, decoding=sampled)
    with pytest.raises(RowRefused, match="decoding:triviaqa:qwen3-4b"):
        record_run(same_model, store_path)
    # Another model may have its own preset (Qwen3 samples, Llama is greedy), and 1 == 1.0.
    record_run(make_run_dir(runs, model="qwen3-8b", scores={"triviaqa": 0.5}, decoding=sampled), store_path)
    assert len(Store(store_path).rows()) == 2
    pins = Store(store_path).pins(LEADERBOARD_VERSION)
    assert pins["set:triviaqa"]["sha256"] and "decoding:triviaqa:qwen3-8b@" in " ".join(pins)


def test_removing_the_pinning_rows_releases_the_pin(runs, store_path):
    ids = record_run(make_run_dir(runs, scores={"triviaqa": 0.6}), store_path)
    other = make_run_dir(runs, model="qwen3-8b", scores={"triviaqa": 0.5})
    edit_metrics(other, "triviaqa", lambda d: d["set"].update(sha256="cd" * 32))
    with pytest.raises(RowRefused):
        record_run(other, store_path)
    assert Store(store_path).remove(ids) == 1
    assert len(record_run(other, store_path)) == 1


def test_reading_a_missing_or_foreign_store_is_a_user_error(tmp_path):
    with pytest.raises(HarnessError, match="no leaderboard store"):
        Store(tmp_path / "none.sqlite").rows()
    foreign = tmp_path / "foreign.sqlite"
    sqlite3.connect(foreign).execute("CREATE TABLE x(y)").connection.commit()
    with pytest.raises(HarnessError, match="not a leaderboard store|store schema"):
        Store(foreign).rows()
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all" * 100)
    with pytest.raises(HarnessError):
        Store(garbage).rows()


WRITER = """
import sys, time
from pathlib import Path
from factrl.leaderboard import record_run
from factrl.leaderboard.testing import make_run_dir
root, store, worker, go = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
dirs = [make_run_dir(root / f"w{worker}", method=f"m{worker}", model=f"model{k}",
                     scores={"triviaqa": 0.1 * k, "popqa": 0.05 * k, "truthfulqa": 0.3},
                     train_phases={"rollout": 10.0 * k}) for k in range(1, 6)]
while not go.exists():
    time.sleep(0.005)
for d in dirs:
    record_run(d, store)
"""


def test_eight_processes_writing_at_once_lose_nothing(tmp_path):
    store, go = tmp_path / "lb.sqlite", tmp_path / "go"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "runs"), str(store), str(w), str(go)],
                              env=env, stderr=subprocess.PIPE, text=True) for w in range(8)]
    time.sleep(0.5)  # let every writer import and build its runs, then start them together
    go.touch()
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
    rows = Store(store).rows()
    assert len(rows) == 8 * 5 * 3
    assert len({(r["run"]["run_id"], r["set"]["name"]) for r in rows}) == 120
    with sqlite3.connect(store) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
