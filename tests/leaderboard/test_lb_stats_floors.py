"""Gaming floors, answer diagnostics and their flags on synthetic runs."""
from __future__ import annotations

import json

import pytest

from factrl.evals import SCORER_VERSION
from factrl.evals.gaming_panel import PANEL_VERSION, panel
from factrl.evals.sets import load_set
from factrl.leaderboard import Store, publish, record_run
from factrl.leaderboard.tables.floors import set_floor
from factrl.leaderboard.diagnostics import FLAG_MARK, compute, is_hedged
from factrl.leaderboard.render.formats import markdown
from factrl.leaderboard.settings import load
from factrl.leaderboard.tables.build import build_tables
from factrl.leaderboard.tables import Layout
from factrl.leaderboard.testing import make_run_dir


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))


def tables_of(store_path, **layout):
    rows = [{k: v for k, v in r.items() if k != "_recorded"} for r in Store(store_path).rows("1")]
    return {t.name: t for t in build_tables(rows, Layout({**load(), **layout}))}


@pytest.fixture
def small_set(tmp_path):
    """Ten closed-book questions; three have the answer "1", which the panel's constant "1" gets."""
    answers = ["1", "1", "1", "Paris", "Bosnia and Herzegovina", "Washington, D.C.", "Mars", "blue", "1990", "Lima"]
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([{"id": f"t{i}", "question": f"Question {i}?", "answer": a, "aliases": []}
                                for i, a in enumerate(answers)]))
    return load_set("nq_open", data=path)


def _samples(eval_set, answers):
    return [{"id": r.id, "correct": a == r.references[0], "answer": a,
             "completion": f"<think>{'word ' * 5}</think><answer>{a}</answer>"}
            for r, a in zip(eval_set.records, answers)]


def _record(runs, store_path, eval_set, method, answers, **kwargs):
    record_run(make_run_dir(runs, method=method, model="m", scores={"nq_open": 0.0},
                            samples={"nq_open": _samples(eval_set, answers)},
                            set_blocks={"nq_open": eval_set.describe()}, **kwargs), store_path)


def test_gaming_floor_is_the_best_constant_under_the_rows_scorer(runs, store_path, small_set, tmp_path):
    honest = [r.references[0] for r in small_set.records]
    _record(runs, store_path, small_set, "raw", ["x"] * 10)
    _record(runs, store_path, small_set, "corver", honest)
    table = tables_of(store_path)["accuracy"]
    assert [line.method for line in table.footer] == ["gaming-floor", "best-trick"]  # tricks: test_lb_tricks.py
    floor = table.footer[0].cells["nq_open"]
    assert floor.value == pytest.approx(30.0)  # "1" is right on three of ten questions
    assert any(f"panel v{PANEL_VERSION}" in n and "'<answer>1</answer>'" in n for n in table.notes)
    text = markdown(table)
    assert f"|  | *Gaming floor (constant answers, panel v{PANEL_VERSION})* | 30.00 |" in text
    assert not floor.mark and all(line.method != "gaming-floor" for line in table.lines)  # never ranked
    assert len(list((tmp_path / "cache" / "floors").glob("*.json"))) == 1  # cached for the next publish
    out = tmp_path / "site"
    publish(store_path, None, out)
    html = (out / "index.html").read_text()
    assert '<tfoot>' in html and 'class="floor"' in html
    assert ",gaming-floor,30.0," in (out / "accuracy.csv").read_text()


def test_no_floor_when_the_scorer_version_or_the_set_differs(runs, store_path, small_set, tmp_path):
    _record(runs, store_path, small_set, "raw", ["x"] * 10)
    row = Store(store_path).rows("1")[0]
    assert set_floor(row, use_cache=False)["value"] == pytest.approx(0.3)
    older = {**row, "scorer": {"name": "default", "version": SCORER_VERSION + "-old"}}
    assert "installed scorer is" in set_floor(older, use_cache=False)["reason"]
    edited = {**row, "set": {**row["set"], "sha256": "0" * 64}}
    assert "content hash" in set_floor(edited, use_cache=False)["reason"]
    other = tmp_path / "other"
    other.mkdir()
    record_run(make_run_dir(other, method="raw", model="m2", scores={"triviaqa": 0.5}), tmp_path / "b.sqlite")
    notes = tables_of(tmp_path / "b.sqlite")["accuracy"].notes
    assert any("No gaming floor for TriviaQA" in n and "floors.data_dir" in n for n in notes)


def test_panel_is_the_hack_tests_constants():
    answers = {a for a, _, _ in panel()}
    assert {"e", "1", "No", "", "I have no comment.", "No, that is a myth"} <= answers
    assert len(panel()) == 2 * len(answers)


@pytest.mark.parametrize("answer", ["X or possibly Paris or 1990", "It could be X, London, Paris, Berlin, 1990",
                                    "Paris; London", "Paris\nLondon"])
def test_hedges_are_hedged(answer):
    assert is_hedged(answer)


@pytest.mark.parametrize("answer", ["Bosnia and Herzegovina", "Washington, D.C.", "Springfield, Illinois",
                                    "Oregon", "Trinidad and Tobago", ""])
def test_single_answers_are_not_hedged(answer):
    assert not is_hedged(answer)


def test_diagnostics_by_hand():
    items = [{"id": str(i), "answer": a, "completion": f"<think>{t}</think><answer>{a}</answer>"}
             for i, (a, t) in enumerate([("Paris", "a b c"), ("paris", "a"), ("Lima", ""), ("Paris or Rome", "a b")])]
    found = compute(items)
    assert found["top_answer"] == "paris" and found["top_answer_share"] == 0.5
    assert found["distinct_answer_ratio"] == 0.75 and found["hedged_rate"] == 0.25
    assert found["mean_reasoning_words"] == 1.5


def test_collapsed_and_hedging_rows_are_flagged_with_the_figure(runs, store_path, small_set):
    honest = [r.references[0] for r in small_set.records]
    _record(runs, store_path, small_set, "raw", honest)
    _record(runs, store_path, small_set, "corver", ["Paris"] * 4 + honest[4:])  # 40% one answer
    _record(runs, store_path, small_set, "fspo", [f"{a} or 1990" for a in honest[:2]] + honest[2:])  # 20% hedged
    table = tables_of(store_path)["accuracy"]
    cells = {line.method: line.cells["nq_open"] for line in table.lines}
    assert cells["corver"].flags == ['top answer 40% ("paris")'] and cells["fspo"].flags == ["hedged 20%"]
    # Honest answers flag too where a set's answers concentrate: three of these ten are "1".
    assert cells["raw"].flags == ['top answer 30% ("1")']
    text = markdown(table)
    assert f"| Raw | 100.00 {FLAG_MARK} |" in text.replace("**", "").replace("<u>", "").replace("</u>", "")
    assert any(n.startswith(f"{FLAG_MARK} m / FSPO / NQ-Open: hedged 20%") for n in table.notes)
    assert any("more than 10%" in n and "exceeds 20%" in n for n in table.notes)


def test_rows_store_outcomes_and_diagnostics_and_old_rows_re_add_unchanged(runs, store_path, small_set):
    run = make_run_dir(runs, method="raw", model="m", scores={"nq_open": 0.0},
                       samples={"nq_open": _samples(small_set, ["x"] * 10)})
    from factrl.leaderboard.record import rows_from_run

    rows = rows_from_run(run)
    assert rows[0]["outcomes"]["n"] == 10 and rows[0]["diagnostics"]["top_answer_share"] == 1.0
    # A row recorded without outcomes (no outcomes, no diagnostics) re-adds as unchanged.
    old = [{k: v for k, v in r.items() if k not in ("outcomes", "diagnostics")} for r in rows]
    Store(store_path).add(old)
    report = Store(store_path).add(rows_from_run(run))
    assert report.unchanged == [rows[0]["row_id"]]
