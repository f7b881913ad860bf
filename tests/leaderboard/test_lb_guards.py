"""A run with a guarded reward is a line of its own, labelled with its guards, in every format;
the row files keep the method's own name (leaderboard/guards.py)."""
from __future__ import annotations

import csv
import json

from factrl.leaderboard import publish, record_run
from factrl.leaderboard.guards import method_base, method_guards, row_guards, table_view
from factrl.leaderboard.testing import make_run_dir

GUARDED = {"settings": {"kind": "settings", "guards": ["format_rule=single_block", "correctness=strict"]}}


def test_the_view_names_the_guards_and_reads_back():
    row = {"method": {"name": "corver", "config_hash": "x"}, "components": GUARDED}
    view = table_view(row)
    assert row_guards(row) == ["correctness=strict", "format_rule=single_block"]
    assert view["method"]["name"] == "corver[correctness=strict;format_rule=single_block]"
    assert view["method"]["base"] == "corver" and row["method"]["name"] == "corver"  # the row is not changed
    assert method_base(view["method"]["name"]) == "corver" and method_guards(view["method"]["name"]) == row_guards(row)
    original = {"method": {"name": "corver"}, "components": {"settings": {"kind": "settings", "guards": []}}}
    assert table_view(original) is original and method_guards("corver") == [] and method_base("corver") == "corver"


def test_guarded_and_original_runs_are_two_lines_in_every_format(runs, store_path, tmp_path):
    record_run(make_run_dir(runs, method="raw", model="m", scores={"triviaqa": 0.50}), store_path)
    record_run(make_run_dir(runs, method="corver", model="m", scores={"triviaqa": 0.60}), store_path)
    record_run(make_run_dir(runs, method="corver", model="m", scores={"triviaqa": 0.40}, components=GUARDED,
                            run_id="20260101-000000-corver-m-9a9a9a9a"),
               store_path)
    out = tmp_path / "site"
    publish(store_path, None, out)
    md = (out / "leaderboard.md").read_text()
    table = md.split("### Closed-book QA accuracy (%)")[1].split("###")[0]
    assert "|  | CorVer | **60.00** | **60.00** |" in table  # not averaged with the guarded run (50.00)
    assert "|  | CorVer (guarded: correctness=strict, format\\_rule=single\\_block) | 40.00 | 40.00 |" in table
    with open(out / "accuracy.csv", newline="") as handle:
        methods = [r["method"] for r in csv.DictReader(handle)]
    assert methods.count("corver") == 1 and "corver[correctness=strict;format_rule=single_block]" in methods
    assert "CorVer (guarded: correctness=strict" in (out / "tables.tex").read_text().replace("\\_", "_")
    assert "CorVer (guarded: correctness=strict" in (out / "index.html").read_text()
    names = {json.loads(p.read_text())["method"]["name"] for p in (out / "rows").glob("*.json")}
    assert names == {"raw", "corver"}  # the stored rows keep the method's own name
