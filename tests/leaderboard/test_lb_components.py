"""Provenance of reward components: rows carry what can change a result, and every
published format marks the lines that used a stand-in, with a legend naming it."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from factrl.harness.core.errors import DataError
from factrl.leaderboard import Store, export_results, publish, record_run, rows_from_results, rows_from_run
from factrl.leaderboard.store import strip_private
from factrl.leaderboard.testing import make_run_dir

from .conftest import phases_for

# What CorVer's Method.components() reports with the heuristic extractor (docs/CONTRACTS.md).
HEURISTIC = {
    "extractor": {"kind": "extractor", "backend": "heuristic", "model": None, "revision": None, "stand_in": True,
                  "label": "heuristic extractor", "note": "stand-in for the paper's QuCo extractor"},
    "corpus": {"kind": "corpus", "backend": "local", "model": None, "revision": None, "stand_in": False,
               "label": "local index", "manifest_hash": "0f1e2d3c", "tokenizer": "HuggingFaceTB/SmolLM2-135M"},
    "settings": {"kind": "settings", "backend": None, "model": None, "revision": None, "stand_in": False,
                 "label": "CorVer settings", "aggregation": "min", "alphas": [1.0, 0.5]},
}
QUCO = {**HEURISTIC, "extractor": {"kind": "extractor", "backend": "hf", "model": "org/quco-extractor",
                                   "revision": "abc123", "stand_in": False, "label": "QuCo extractor"}}


def with_components(run: Path, components: dict, stand_ins: list[str] | None = None) -> Path:
    """Add what `harness run` copies from train/components.json to a run.json."""
    info = json.loads((run / "run.json").read_text())
    names = sorted(n for n, c in components.items() if c.get("stand_in")) if stand_ins is None else stand_ins
    (run / "run.json").write_text(json.dumps({**info, "components": components, "stand_ins": names}))
    return run


def grid(runs: Path, store: Path) -> None:
    """Raw and CorVer on two models; CorVer on qwen3-4b used the heuristic extractor."""
    for model, components in (("qwen3-4b", HEURISTIC), ("qwen3-8b", QUCO)):
        record_run(make_run_dir(runs, method="raw", model=model, scores={"triviaqa": 0.5}), store)
        run = make_run_dir(runs, method="corver", model=model, scores={"triviaqa": 0.6},
                           train_phases=phases_for(3600))
        record_run(with_components(run, components), store)


def test_rows_record_components_and_stand_ins(runs):
    run = with_components(make_run_dir(runs, scores={"triviaqa": 0.6}), HEURISTIC)
    row = rows_from_run(run)[0]
    assert row["components"] == HEURISTIC
    assert row["stand_ins"] == [{"name": "extractor", "label": "heuristic extractor"}]
    # A component flagged as a stand-in counts even when run.json's list forgot it.
    assert rows_from_run(with_components(run, HEURISTIC, stand_ins=[]))[0]["stand_ins"] == row["stand_ins"]
    faithful = rows_from_run(with_components(run, QUCO))[0]
    assert faithful["stand_ins"] == [] and faithful["components"]["extractor"]["revision"] == "abc123"
    raw = rows_from_run(make_run_dir(runs, method="raw", scores={"triviaqa": 0.5}))[0]
    assert raw["components"] == {} and raw["stand_ins"] == []


def test_components_from_train_file_when_run_json_lacks_them(runs):
    run = make_run_dir(runs, scores={"triviaqa": 0.6})
    (run / "train").mkdir()
    (run / "train" / "components.json").write_text(json.dumps(
        {"schema": "factrl.components/1", "method": "corver", "method_version": "1", "components": HEURISTIC}))
    assert rows_from_run(run)[0]["stand_ins"] == [{"name": "extractor", "label": "heuristic extractor"}]


@pytest.mark.parametrize("components, stand_ins, match", [
    (["extractor"], [], "components must be a mapping of name -> object"),
    ({"extractor": "heuristic"}, [], "components must be a mapping of name -> object"),
    ({}, "extractor", "stand_ins must be a list of component names"),
])
def test_malformed_components_are_one_line_errors(runs, components, stand_ins, match):
    run = with_components(make_run_dir(runs, scores={"triviaqa": 0.6}), {}, [])
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "components": components, "stand_ins": stand_ins}))
    with pytest.raises(DataError, match=rf"run.json: {match}"):
        rows_from_run(run)


def test_rows_without_the_fields_count_as_none_and_re_add_unchanged(runs, store_path):
    run = make_run_dir(runs, method="raw", scores={"triviaqa": 0.5})
    old = [{k: v for k, v in r.items() if k not in ("components", "stand_ins")} for r in rows_from_run(run)]
    Store(store_path).add(old)  # a row recorded before the fields existed
    assert Store(store_path).add(rows_from_run(run)).unchanged == [old[0]["row_id"]]
    publish(store_path, None, store_path.parent / "site")
    assert "‡" not in (store_path.parent / "site" / "leaderboard.md").read_text()


def test_every_format_marks_stand_in_lines_with_a_legend(runs, store_path, tmp_path):
    grid(runs, store_path)
    out = tmp_path / "site"
    publish(store_path, None, out)
    md = (out / "leaderboard.md").read_text()
    assert "| qwen3-4b | Raw | 50.00 |" in md and "|  | CorVer ‡ | **60.00** |" in md
    assert "| qwen3-8b | Raw |" in md and "|  | CorVer | **60.00** |" in md  # QuCo: paper-faithful, unmarked
    legend = ("‡ = ran with a stand-in component, not a paper-faithful run: heuristic extractor (stand-in for "
              "the paper's QuCo extractor), used by qwen3-4b / CorVer.")
    # The time table's CorVer line spans both models: it is marked, and the legend names the model.
    # Accuracy, time and the difference-to-Raw view (the uncertainty view's label adds "[1 seed]").
    assert md.count(f"- {legend}") == 3 and "| CorVer ‡ | 100 |" in md
    with open(out / "accuracy.csv", newline="") as handle:
        marks = {(r["model"], r["method"]): r["stand_ins"] for r in csv.DictReader(handle)}
    assert marks == {("qwen3-4b", "raw"): "", ("qwen3-4b", "corver"): "heuristic extractor",
                     ("qwen3-8b", "raw"): "", ("qwen3-8b", "corver"): ""}
    with open(out / "rows.csv", newline="") as handle:
        long = list(csv.DictReader(handle))
    marked = {r["row_id"] for r in long if r["stand_ins"] == "heuristic extractor"}
    assert len(marked) == 1 and all(json.loads(r["components"]) is not None for r in long)
    tex = (out / "tables.tex").read_text()
    assert r"CorVer \textsuperscript{\ddag} & \textbf{60.00}" in tex and r"\ddag{} = ran with a stand-in" in tex
    html = (out / "index.html").read_text()
    # The mark expands on demand; the page's one legend names the stand-in and who used it, once.
    assert html.count('<summary class="standin" title="stand-in: heuristic extractor">‡</summary>') == 4
    legend = html.split('id="legend"')[1].split("</section>")[0]
    assert ("<b>heuristic extractor</b>: stand-in for the paper&#x27;s QuCo extractor <span class=\"muted\">(used by "
            "qwen3-4b / CorVer)</span>") in legend
    assert "used by qwen3-4b / CorVer." not in html  # no footnote repeated under the tables
    assert "‡ heuristic extractor (stand-in for the paper&#x27;s QuCo extractor)" in html  # provenance section
    assert "org/quco-extractor" in html and "0f1e2d3c" in html  # every component is in the provenance


def test_components_survive_a_results_file_round_trip(runs, store_path, tmp_path):
    grid(runs, store_path)
    rows = [strip_private(r) for r in Store(store_path).rows(method="corver", model="qwen3-4b")]
    again = rows_from_results(json.loads(json.dumps(export_results(rows))), "r.json")
    assert again[0]["stand_ins"] == rows[0]["stand_ins"] and again[0]["components"] == HEURISTIC
    assert Store(store_path).add(again).unchanged == [rows[0]["row_id"]]  # same content from another source
