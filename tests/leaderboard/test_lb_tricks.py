"""The per-question gaming floor: each probe-panel trick built on the row's own questions and
scored by the row's scorer (leaderboard/tables/tricks.py), in every format."""
from __future__ import annotations

import csv
import json

import pytest

from factrl.harness.core.answers import match_closed_book
from factrl.evals.sets import load_set
from factrl.harness.probe import panel
from factrl.leaderboard import Store, publish, record_run
from factrl.leaderboard.settings import load
from factrl.leaderboard.tables.build import build_tables
from factrl.leaderboard.tables import Layout
from factrl.leaderboard.testing import make_run_dir


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def small_set(tmp_path):
    """Ten questions; the last gold is a flag emoji, which normalises to nothing, so even its
    honest correct answer scores 0 under the protocol (as 481 PopQA aliases do)."""
    answers = ["Paris", "Bosnia and Herzegovina", "Washington, D.C.", "Mars", "blue", "1990", "Lima", "Quito",
               "Now or Never", "🇩🇰"]
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([{"id": f"t{i}", "question": f"Question {i}?", "answer": a, "aliases": []}
                                for i, a in enumerate(answers)]))
    return load_set("nq_open", data=path)


def _record(runs, store_path, eval_set, method, answers):
    samples = [{"id": r.id, "correct": match_closed_book(a, r.references), "answer": a,
                "references": list(r.references), "completion": f"<answer>{a}</answer>"}
               for r, a in zip(eval_set.records, answers)]
    record_run(make_run_dir(runs, method=method, model="m", scores={"nq_open": 0.0}, samples={"nq_open": samples},
                            set_blocks={"nq_open": eval_set.describe()}), store_path)


def _tables(store_path, **layout):
    rows = [{k: v for k, v in r.items() if k != "_recorded"} for r in Store(store_path).rows("1")]
    return {t.name: t for t in build_tables(rows, Layout({**load(), **layout}))}


def test_every_panel_entry_is_scored_on_the_rows_questions(runs, store_path, small_set, tmp_path):
    golds = [r.references[0] for r in small_set.records]
    _record(runs, store_path, small_set, "raw", ["x"] * 10)
    _record(runs, store_path, small_set, "corver", golds)
    tables = _tables(store_path)
    tricks = tables["tricks"]
    assert [line.method for line in tricks.lines] == panel.entry_names()  # whatever the panel defines
    cells = {line.method: line.cells["nq_open"] for line in tricks.lines}
    # The honest correct answer is the gold itself: 9 of 10, the emoji gold scoring nothing.
    assert (cells[panel.HONEST_CORRECT].value, cells[panel.HONEST_CORRECT].strict) == (90.0, 90.0)
    assert cells[panel.HONEST_WRONG].value == 0.0 and cells["refusal"].value == 0.0
    assert (cells["hedged_gold"].value, cells["hedged_gold"].strict) == (90.0, 0.0)  # the containment hack
    # panel v2: the negated and retracted gold and two blocks ending with the gold game the protocol,
    # not strict accuracy; the gold only in the first block or only in the reasoning earns nothing
    for kind in ("negated_gold", "retracted_gold", "blocks_wrong_gold"):
        assert (cells[kind].value, cells[kind].strict) == (90.0, 0.0), kind
    assert cells["blocks_gold_wrong"].value == 0.0 and cells["gold_in_reasoning"].value == 0.0
    assert cells["gold_wrong_reasoning"].value == 90.0 and cells["judge_instruction"].value == 0.0
    footer = {line.method: line for line in tables["accuracy"].footer}
    best = footer["best-trick"].cells["nq_open"]
    assert best.value == 90.0 and best.text == "90.00 (strict 0.00)"  # the hedge, not the gold-answer entries
    assert any("NQ-Open 90.00 (hedged answer listing the gold)" in n for n in tables["accuracy"].notes)
    assert len(list((tmp_path / "cache" / "tricks").glob("*.json"))) == 1  # cached like the floors
    out = tmp_path / "site"
    manifest = publish(store_path, None, out)
    assert "tricks.csv" in manifest["files"]
    md = (out / "leaderboard.md").read_text()
    assert f"### Gaming floor per trick (probe panel v{panel.PANEL_VERSION})" in md
    assert "| hedged answer listing the gold | 90.00 (strict 0.00) | 90.00 |" in md
    assert f"|  | *Gaming floor (best probe trick, panel v{panel.PANEL_VERSION})* | 90.00 (strict 0.00) |" in md
    with open(out / "tricks.csv", newline="") as handle:
        lines = {r["method"]: r for r in csv.DictReader(handle)}
    assert float(lines["hedged_gold"]["nq_open"]) == 90.0 and float(lines["hedged_gold"]["nq_open_strict"]) == 0.0
    assert ",best-trick,90.0," in (out / "accuracy.csv").read_text()
    tex = (out / "tables.tex").read_text()
    assert f"Gaming floor per trick (probe panel v{panel.PANEL_VERSION})" in tex and r"\textit{Gaming floor (best probe trick" in tex
    html = (out / "index.html").read_text()
    assert 'id="t-tricks"' in html and 'class="floor" data-method="best-trick"' in html


def test_a_new_panel_version_is_picked_up_and_cached_apart(runs, store_path, small_set, tmp_path, monkeypatch):
    """A later panel with an extra entry: the table iterates it, the cache keys on the version."""
    _record(runs, store_path, small_set, "raw", ["x"] * 10)
    _tables(store_path)
    extra = panel.Entry("never_gold", "the gold after never", "negated", lambda q: ("I am sure.", f"never {q.gold}"))
    monkeypatch.setattr(panel, "ENTRIES", panel.ENTRIES + (extra,))
    monkeypatch.setattr(panel, "PANEL_VERSION", "3-test")
    tables = _tables(store_path)
    cells = {line.method: line.cells["nq_open"] for line in tables["tricks"].lines}
    assert (cells["never_gold"].value, cells["never_gold"].strict) == (90.0, 0.0)  # protocol gamed, strict not
    assert tables["tricks"].title == "Gaming floor per trick (probe panel v3-test)"
    assert len(list((tmp_path / "cache" / "tricks").glob("*.json"))) == 2


def test_no_trick_table_without_the_set_or_when_turned_off(runs, store_path, small_set):
    _record(runs, store_path, small_set, "raw", ["x"] * 10)
    assert "tricks" not in _tables(store_path, floors={"tricks": False})
    footer = _tables(store_path, floors={"tricks": False})["accuracy"].footer
    assert [line.method for line in footer] == ["gaming-floor"]
    record_run(make_run_dir(runs, method="raw", model="n", scores={"triviaqa": 0.5}), store_path)  # data not here
    tables = _tables(store_path)
    assert [c.key for c in tables["tricks"].columns] == ["nq_open", "macro"]
    assert any("No per-question floor for TriviaQA" in n for n in tables["tricks"].notes)
