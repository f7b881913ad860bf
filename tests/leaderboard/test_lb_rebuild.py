"""`harness leaderboard rebuild`: a store rebuilt from run directories, independent of order.

Run directories are the real CONTRACTS layout (leaderboard.testing.make_run_dir), spread over
nested folders as a multirun leaves them, with an unfinished and a broken run beside them.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from factrl.harness.core.errors import HarnessError
from factrl.leaderboard.publishing import publish
from factrl.leaderboard.rebuild import rebuild
from factrl.leaderboard.store import RowRefused, Store
from factrl.leaderboard.record import rows_from_run
from factrl.leaderboard.testing import GREEDY, make_run_dir
from tests.helpers import harness

from .conftest import FIVE, phases_for

SCORES = {"qwen3-4b": {"raw": (52.32, 24.82, 17.73, 2.96, 45.29), "corver": (57.57, 31.86, 22.16, 4.23, 50.31)},
          "qwen3-8b": {"raw": (63.75, 30.94, 21.45, 3.01, 42.72), "fspo": (64.77, 32.24, 22.77, 3.91, 49.33)}}


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, list[Path], dict[str, Path]]:
    """Finished runs in runs/ and runs/multirun/<n>/, plus an unfinished, a broken and a hidden one."""
    root = tmp_path / "runs"
    finished = []
    for i, (model, methods) in enumerate(SCORES.items()):
        for j, (method, values) in enumerate(methods.items()):
            folder = root / "multirun" / str(2 * i + j) if j else root
            finished.append(make_run_dir(folder, method=method, model=model,
                                         scores={s: v / 100 for s, v in zip(FIVE, values)},
                                         train_phases=None if method == "raw" else phases_for(3600),
                                         popularity=True))
    unfinished = make_run_dir(root / "multirun" / "9", method="corver", model="qwen3-8b", train_phases=phases_for(10))
    info = json.loads((unfinished / "run.json").read_text())
    (unfinished / "run.json").write_text(json.dumps({**info, "status": "running", "finished": None}))
    broken = make_run_dir(root, method="fspo", model="qwen3-4b", train_phases=phases_for(10))
    (broken / "eval" / "triviaqa" / "metrics.json").write_text("{not json")
    hidden = make_run_dir(root / "multirun" / ".submitit", method="raw", model="hidden-model")
    return root, finished, {"unfinished": unfinished, "broken": broken, "hidden": hidden}


def _published(store: Path, out: Path, monkeypatch) -> dict[str, bytes]:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    publish(store, None, out, {"reported": []})
    files = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    manifest = json.loads(files.pop("manifest.json"))
    manifest.pop("store")  # the one field that names the store's own path
    files["manifest.json"] = json.dumps(manifest, sort_keys=True).encode()
    return files


def test_rebuilds_from_shuffled_inputs_publish_byte_identical_tables(runs, tmp_path, monkeypatch):
    root, finished, bad = runs
    first = rebuild([root], tmp_path / "a.sqlite")
    order = [*finished, bad["unfinished"], bad["broken"]]
    random.Random(7).shuffle(order)
    second = rebuild(order, tmp_path / "b.sqlite")  # each run directory passed on its own, shuffled
    assert first.rows == second.rows == 4 * 5 and first.versions == {"1": 20}
    assert sorted(first.runs) == sorted(p.resolve() for p in finished) == second.runs
    skipped = dict(first.skipped)
    assert set(skipped) == {bad["unfinished"].resolve(), bad["broken"].resolve()}  # .submitit/ is not searched
    assert "unfinished" in skipped[bad["unfinished"].resolve()]
    assert "metrics.json" in skipped[bad["broken"].resolve()] and "not valid JSON" in skipped[bad["broken"].resolve()]
    a, b = Store(tmp_path / "a.sqlite"), Store(tmp_path / "b.sqlite")
    assert a.pins("1") == b.pins("1") and a.pins("1")
    pub_a = _published(tmp_path / "a.sqlite", tmp_path / "out-a", monkeypatch)
    pub_b = _published(tmp_path / "b.sqlite", tmp_path / "out-b", monkeypatch)
    assert {"leaderboard.md", "accuracy.csv", "rows.csv", "tables.tex", "index.html",
            "plots/gain_over_raw.png"} <= set(pub_a)
    assert b"Generated 2026-01-01T00:00:00+00:00" in pub_a["leaderboard.md"]
    assert sorted(pub_a) == sorted(pub_b)
    different = [name for name in pub_a if pub_a[name] != pub_b[name]]
    assert different == []
    # A row's date is its run's finish time, not the time of the rebuild.
    assert {r["date"] for r in a.rows("1")} == {"2026-01-01T00:00:00+00:00"}


def test_an_existing_store_is_replaced_only_when_asked(runs, tmp_path):
    root, finished, _ = runs
    store = tmp_path / "lb.sqlite"
    rebuild([root], store)
    with pytest.raises(HarnessError, match=r"already holds 20 row\(s\); pass --replace"):
        rebuild([root], store)
    removed = finished[0]
    removed.rename(tmp_path / "elsewhere")
    report = rebuild([root], store, replace=True)
    assert report.rows == 15 and len(Store(store).rows("1")) == 15  # the moved run's rows are gone
    assert sorted(p.name for p in tmp_path.glob("*.sqlite*")) == ["lb.sqlite"]  # no temporary store left
    other = tmp_path / "other.sqlite"
    import sqlite3

    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE users(name TEXT)")
    with pytest.raises(HarnessError, match="not a leaderboard store"):
        rebuild([root], other, replace=True)  # never overwrites another program's database


def test_disagreeing_runs_fail_the_same_way_in_any_order(tmp_path):
    """Two runs that disagree on a frozen field (decoding of one model on one set): adding them
    one by one lets whichever comes first pin the field; the rebuild refuses both orders alike."""
    root = tmp_path / "runs"
    greedy = make_run_dir(root, method="raw", model="qwen3-4b", scores={"triviaqa": 0.5})
    sampled = make_run_dir(root, method="corver", model="qwen3-4b", scores={"triviaqa": 0.6},
                           decoding={**GREEDY, "temperature": 0.7, "do_sample": True}, train_phases=phases_for(60))
    pinned = []
    for order in ((greedy, sampled), (sampled, greedy)):
        store = Store(tmp_path / f"naive-{len(pinned)}.sqlite")
        store.add(rows_from_run(order[0]))
        with pytest.raises(RowRefused, match="froze"):
            store.add(rows_from_run(order[1]))
        pinned.append(store.pins("1"))
    assert pinned[0] != pinned[1]  # "first row wins": the order decides what the version freezes
    errors = []
    for order in ((greedy, sampled), (sampled, greedy)):
        with pytest.raises(HarnessError, match="disagree on a frozen field") as err:
            rebuild(list(order), tmp_path / "lb.sqlite")
        errors.append(str(err.value))
    assert errors[0] == errors[1]
    assert "decoding:triviaqa:qwen3-4b" in errors[0] and str(greedy.resolve()) in errors[0]
    assert str(sampled.resolve()) in errors[0] and not (tmp_path / "lb.sqlite").exists()


def test_cli_rebuild_reports_skipped_runs_by_path(runs, tmp_path):
    root, _, bad = runs
    store = tmp_path / "cli.sqlite"
    result = harness("leaderboard", "rebuild", str(root), "--store", str(store))
    assert result.returncode == 0, result.stderr
    assert f"rebuilt {store} from 4 finished run directories: 20 row(s) (version 1: 20); skipped 2" in result.stdout
    assert f"skipped {bad['unfinished'].resolve()}: unfinished" in result.stderr
    again = harness("leaderboard", "rebuild", str(root), "--store", str(store))
    assert again.returncode == 2 and again.stderr.strip().count("\n") == 0 and "--replace" in again.stderr


def test_rebuilds_from_moved_run_directories_publish_a_byte_identical_site(runs, tmp_path, monkeypatch):
    """The same runs copied to two other places, rebuilt into two stores and published (no
    SOURCE_DATE_EPOCH): every file is the same bytes, and none names a path of this machine;
    `stamp=True` writes the time and the full paths."""
    import shutil

    root, finished, _ = runs
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    sites = {}
    for place in ("here", "there/deeper"):
        copy = tmp_path / place / "runs"
        shutil.copytree(root, copy)
        rebuild([copy], tmp_path / place / "lb.sqlite")
        out = tmp_path / place / "site"
        publish(tmp_path / place / "lb.sqlite", None, out, {"reported": []})
        sites[place] = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    a, b = sites.values()
    assert sorted(a) == sorted(b) and len(a) > 20
    assert [name for name in a if a[name] != b[name]] == []
    machine = str(tmp_path).encode()
    assert [name for name, data in a.items() if machine in data] == []
    row = json.loads(next(data for name, data in a.items() if name.startswith("rows/")))
    assert row["source"].startswith("run:") and "/" not in row["source"]
    assert b"Generated by factrl-harness" in a["leaderboard.md"] and "generated" not in json.loads(a["manifest.json"])
    stamped = tmp_path / "stamped"
    manifest = publish(tmp_path / "here" / "lb.sqlite", None, stamped, {"reported": []}, stamp=True)
    assert manifest["generated"] and manifest["store"] == str((tmp_path / "here" / "lb.sqlite").resolve())
    assert str(tmp_path / "here" / "runs").encode() in (stamped / "index.html").read_bytes()
