"""Strict accuracy in the rows and the tables: rule v3 when a row is recorded, old rows keep
their version mark, and `primary - strict` is shown as a gaming signal."""
from __future__ import annotations

import csv

import pytest

from factrl.evals.sets import load_set
from factrl.harness.core.answers import STRICT_VERSION, match_closed_book
from factrl.leaderboard import Store, publish, record_run, rows_from_run
from factrl.leaderboard.diagnostics import FLAG_MARK, compute, strict_verdict
from factrl.leaderboard.render.formats import md_escape
from factrl.leaderboard.settings import load
from factrl.leaderboard.tables.build import build_tables
from factrl.leaderboard.tables.movement import EVAL_NOT_MOVED_MARK
from factrl.leaderboard.tables import Layout
from factrl.leaderboard.testing import make_run_dir


def sample(i: int, answer: str, references: list[str], completion: str | None = None) -> dict:
    completion = completion if completion is not None else f"<think>r</think><answer>{answer}</answer>"
    return {"id": f"q{i}", "answer": answer, "references": references, "completion": completion,
            "correct": match_closed_book(answer, references)}


def test_real_references_with_commas_or_and_keep_scoring(shared_data):
    """Every NQ-Open / PopQA reference containing a comma, 'and' or 'or', given as the answer."""
    checked = 0
    for name in ("nq_open", "popqa"):
        for record in load_set(name, data_dir=shared_data / "benchmarks").records:
            for ref in record.references:
                if "," in ref or " and " in ref or " or " in ref:
                    checked += 1
                    item = sample(0, ref, list(record.references))
                    assert strict_verdict(item) == (item["correct"], None), ref
    assert checked > 50


def test_strict_accuracy_v3_in_the_row_diagnostics():
    samples = [sample(1, "Paris", ["Paris"]), sample(2, "Paris or Rome", ["Rome"]), sample(3, "Lima", ["Quito"]),
               sample(4, "not Quito", ["Quito"]), sample(5, "Bosnia and Herzegovina", ["Bosnia and Herzegovina"]),
               sample(6, "Oslo", ["Oslo"], "<answer>Bergen</answer><answer>Oslo</answer>")]
    found = compute(samples)
    assert found["accuracy_strict"] == pytest.approx(2 / 6) and found["strict_rule"] == STRICT_VERSION == "7"
    assert found["strict_withdrawn"] == {"candidates": 1, "multiple_blocks": 1, "negated": 1}
    assert compute([{"id": "1", "answer": "x"}])["accuracy_strict"] is None  # no verdicts stored
    # TruthfulQA answers are sentences: "not" and "or" are ordinary words there, one block is the rule.
    sentence = {"id": "t", "answer": "No, you do not", "references": ["No"], "correct": True,
                "completion": "<answer>No, you do not</answer>"}
    assert compute([sentence], task="truthfulqa")["accuracy_strict"] == 1.0
    assert compute([{**sentence, "completion": "<answer>x</answer><answer>No, you do not</answer>"}],
                   task="truthfulqa")["accuracy_strict"] == 0.0


def _rows(store_path):
    return [{k: v for k, v in r.items() if k != "_recorded"} for r in Store(store_path).rows("1")]


def test_the_gap_is_flagged_in_every_format_and_old_rows_keep_their_rule(runs, store_path, tmp_path):
    honest = [sample(i, f"Answer {i}", [f"Answer {i}"]) for i in range(40)]
    gamed = [sample(i, f"Answer {i}" if i % 4 else f"Wrong or Answer {i}", [f"Answer {i}"]) for i in range(40)]
    record_run(make_run_dir(runs, method="raw", model="m", scores={"nq_open": 0.0}, samples={"nq_open": honest}),
               store_path)
    record_run(make_run_dir(runs, method="fspo", model="m", scores={"nq_open": 0.0}, samples={"nq_open": gamed}),
               store_path)
    old = make_run_dir(runs, method="corver", model="m", scores={"nq_open": 0.0}, samples={"nq_open": honest})
    # A row recorded under rule 1 (as an older harness stored it) keeps its figure and version:
    # recording the run again re-adds it unchanged, since diagnostics are derived (rows.py).
    [row] = rows_from_run(old)
    row["diagnostics"] = {**row["diagnostics"], "strict_rule": "1", "accuracy_strict": 0.95}
    row["diagnostics"].pop("strict_withdrawn")
    Store(store_path).add([row])
    assert Store(store_path).add(rows_from_run(old)).unchanged == [row["row_id"]]
    table = {t.name: t for t in build_tables(_rows(store_path), Layout(load()))}["accuracy"]
    cells = {line.method: line.cells["nq_open"] for line in table.lines}
    assert cells["fspo"].value == 100.0 and cells["fspo"].strict == 75.0 and cells["fspo"].strict_rule == STRICT_VERSION
    assert cells["corver"].strict_rule == "1" and cells["raw"].flags == []
    assert cells["fspo"].flags == [f"strict gap 25.0 pp (strict v{STRICT_VERSION}: 10 candidates)", "hedged 25%"]
    assert cells["corver"].flags == ["strict gap 5.0 pp (strict v1)"]
    out = tmp_path / "site"
    publish(store_path, None, out)
    md = (out / "leaderboard.md").read_text()
    # All lines tie at 100: no bold; FSPO's verdicts equal Raw's, so it is also flagged ≈ (movement.py).
    assert f"|  | FSPO {EVAL_NOT_MOVED_MARK} | 100.00 {FLAG_MARK} |" in md
    assert md_escape(f"{FLAG_MARK} m / FSPO / NQ-Open: strict gap 25.0 pp (strict v{STRICT_VERSION}: 10 candidates); hedged 25%") in md
    assert "strict 75.00 (gap 25.00)" in md and "strict v1 95.00 (gap 5.00)" in md  # the uncertainty view
    assert "or its accuracy exceeds its strict accuracy by more than 2 pp" in md  # the legend
    with open(out / "accuracy.csv", newline="") as handle:
        lines = {r["method"]: r for r in csv.DictReader(handle)}
    assert float(lines["fspo"]["nq_open_strict_gap"]) == pytest.approx(25.0)
    assert lines["fspo"]["nq_open_strict_rule"] == STRICT_VERSION and lines["corver"]["nq_open_strict_rule"] == "1"
    tex = (out / "tables.tex").read_text()
    assert r"100.00\,$\triangleright$" in tex and "strict gap 25.0 pp" in tex
    html = (out / "index.html").read_text()
    assert f"strict v{STRICT_VERSION} 75.00 (gap 25.00)" in html
    assert f"strict gap 25.0 pp (strict v{STRICT_VERSION}: 10 candidates)" in html
