"""Reported results: the shipped CorVer file, validation, and publishing beside measured rows."""
from __future__ import annotations

import csv
import json

import pytest
import yaml

from factrl.harness.core.errors import DataError, HarnessError
from factrl.leaderboard import Store, publish, record_run
from factrl.leaderboard.cli import main
from factrl.leaderboard.reported import load_reported
from factrl.leaderboard.tables.reported import wilson
from factrl.leaderboard.testing import make_run_dir

from .conftest import FIVE, PAPER_LLAMA32_3B, fill_paper_grid

# Table 18's macro column (Qwen3-4B, Qwen3-8B): a third place the paper prints Table 1's macros.
TABLE18_MACRO = {"raw": (28.62, 32.37), "corver": (33.22, 37.68), "fspo": (29.33, 34.60),
                 "rlfh": (25.89, 31.79), "forag": (26.96, 30.57), "knowrl": (20.80, 30.48)}


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))


def _value(reported, method, model, set_name):
    found = reported.for_model(model).get(method, {}).get(set_name)
    return None if found is None else found.value


def test_shipped_corver_file_is_consistent_with_the_paper():
    reported = load_reported("corver-paper")
    assert reported.paper == "corver" and reported.version == "1"
    # Table 1: 6 methods x 4 models x (5 sets + macro); Table 10 adds Raw/CorVer of OLMo-2-13B and Qwen3-14B.
    assert len(reported.entries) == 6 * 4 * 6 + 2 * 2 * 5
    both = [e for e in reported.entries if {r.table for r in e.refs} == {"1", "10"}]
    assert len(both) == 2 * 4 * 5  # Table 10 repeats Raw and CorVer of the four main models, same values
    assert all(r.page is None and r.section in ("3", "D.1") for e in reported.entries for r in e.refs)
    for method, values in PAPER_LLAMA32_3B.items():  # the conftest's independent transcription
        assert [_value(reported, method, "llama-3.2-3b", s) for s in FIVE] == list(values)
    for model in ("llama-3.2-3b", "llama-3.1-8b", "qwen3-4b", "qwen3-8b"):
        for method in PAPER_LLAMA32_3B:
            cells = [_value(reported, method, model, s) for s in FIVE]
            assert abs(sum(cells) / 5 - _value(reported, method, model, "macro")) <= 0.011, (model, method)
    for method, (q4, q8) in TABLE18_MACRO.items():
        macros = (_value(reported, method, "qwen3-4b", "macro"), _value(reported, method, "qwen3-8b", "macro"))
        assert macros == (q4, q8)
    assert _value(reported, "corver", "qwen3-14b", "truthfulqa") == 53.49
    assert _value(reported, "raw", "olmo-2-13b", "triviaqa") == 68.62


def _file(tmp_path, entries, name="mine.yaml", **top):
    path = tmp_path / name
    doc = {"schema": "factrl.reported/1", "paper": "testpaper", "version": 2, **top,
           "entries": [{"metric": "accuracy", "table": "2", "page": 7, **e} for e in entries]}
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("field,typo,nearest", [("set", "nq-open", "nq_open"), ("model", "qwen3-4B", "qwen3-4b"),
                                                ("method", "corvr", "corver")])
def test_a_typo_in_a_name_is_an_error_naming_the_entry_and_the_nearest_name(tmp_path, field, typo, nearest):
    good = {"method": "corver", "model": "qwen3-4b", "set": "triviaqa", "value": 50.0}
    path = _file(tmp_path, [good, {**good, field: typo}])
    with pytest.raises(DataError) as err:
        load_reported(path)
    text = str(err.value)
    assert str(path) in text and "entries[1]" in text and f"{field} '{typo}'" in text and f"'{nearest}'" in text


def test_conflicting_duplicates_and_bad_values_are_refused(tmp_path):
    entry = {"method": "raw", "model": "qwen3-4b", "set": "popqa", "value": 17.73}
    with pytest.raises(DataError, match=r"entries\[1\].*says 17.7.*earlier entry 17.73"):
        load_reported(_file(tmp_path, [entry, {**entry, "value": 17.7}]))
    with pytest.raises(DataError, match=r"entries\[0\].*value 50 must be a number in the file's unit \(fraction"):
        load_reported(_file(tmp_path, [{**entry, "value": 50}], unit="fraction"))
    with pytest.raises(DataError, match=r"entries\[0\]: missing page"):
        path = tmp_path / "nopage.yaml"
        path.write_text(yaml.safe_dump({"schema": "factrl.reported/1", "paper": "p", "version": 1, "entries": [
            {k: v for k, v in {**entry, "metric": "accuracy", "table": "1"}.items()}]}))
        load_reported(path)
    with pytest.raises(DataError, match="no shipped reported file"):
        load_reported("corver-papr")
    same = load_reported(_file(tmp_path, [entry, {**entry, "table": "9", "page": None, "section": "D.1"}]))
    assert [r.text() for r in same.entries[0].refs] == ["Table 2 (p. 7)", "Table 9 (§D.1)"]


def test_wilson_interval_against_a_hand_computation():
    # p = 0.5, n = 100, z = 1.959964: centre 0.5, half-width 1.96 * sqrt(0.0025 + z^2/40000) / (1 + z^2/100).
    low, high = wilson(50.0, 100)
    assert (low, high) == pytest.approx((40.383, 59.617), abs=1e-3)
    low, high = wilson(0.0, 10)  # p = 0: the upper end is z^2 / (n + z^2)
    assert low == pytest.approx(0.0, abs=1e-9) and high == pytest.approx(27.75, abs=0.01)


def _comparisons(out):
    data = json.loads((out / "reported.json").read_text())
    return {(c["method"], c["set"]): c for c in data["comparisons"]}, data


def test_reported_rows_publish_beside_measured_rows_with_the_gap(runs, store_path, tmp_path):
    counts = {"triviaqa": 1000, "nq_open": 1000}
    measured = {"raw": {"triviaqa": 0.45, "nq_open": 0.30}, "corver": {"triviaqa": 0.50, "nq_open": 0.405}}
    for method, scores in measured.items():
        record_run(make_run_dir(runs, method=method, model="qwen3-4b", scores=scores, counts=counts), store_path)
    mine = _file(tmp_path, [
        {"method": "corver", "model": "qwen3-4b", "set": "nq_open", "value": 40.0},  # inside the interval
        {"method": "corver", "model": "qwen3-4b", "set": "triviaqa", "value": 60.0},  # far outside
        {"method": "raw", "model": "qwen3-4b", "set": "nq_open", "value": 30.0},
        {"method": "fspo", "model": "qwen3-4b", "set": "nq_open", "value": 99.0},  # reported only, best of all
        {"method": "raw", "model": "qwen3-8b", "set": "nq_open", "value": 31.0}])  # model not measured
    out = tmp_path / "site"
    manifest = publish(store_path, "1", out, {"reported": [str(mine)]})
    assert manifest["reported"]["table"] and manifest["reported"]["files"][0]["paper"] == "testpaper"
    found, data = _comparisons(out)
    nq, tqa = found[("corver", "nq_open")], found[("corver", "triviaqa")]
    assert nq["gap"] == pytest.approx(0.5) and nq["inside"] is True and nq["n"] == 1000
    assert nq["interval"] == pytest.approx(list(wilson(40.5, 1000)))
    assert tqa["gap"] == pytest.approx(-10.0) and tqa["inside"] is False
    assert found[("fspo", "nq_open")]["measured"] is None and found[("fspo", "nq_open")]["gap"] is None
    assert ("raw", "nq_open") in found and all(c["model"] == "qwen3-4b" for c in data["comparisons"])

    md = (out / "leaderboard.md").read_text()
    section = md[md.index("### Measured vs reported"):]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    methods = [line.split(" | ")[1] for line in lines[2:]]
    assert methods == ["Raw (measured)", "Raw (reported, testpaper)", "FSPO (reported, testpaper)",
                       "CorVer (measured)", "CorVer (reported, testpaper)"]
    fspo, corver_measured, corver_reported = lines[4], lines[5], lines[6]
    assert "99.00" in fspo and "**" not in fspo  # never ranked, though it is the highest number
    assert "**40.50**" in corver_measured  # the measured ranking is the accuracy table's
    assert "(+0.50§)" in corver_reported and "(-10.00)" in corver_reported
    assert "reported models without a measured row (not shown): qwen3-8b" in section
    with open(out / "reported.csv", newline="") as handle:
        rows = {r["method"]: r for r in csv.DictReader(handle)}
    assert float(rows["corver (reported, testpaper)"]["nq_open_diff"]) == pytest.approx(0.5)
    with open(out / "accuracy.csv", newline="") as handle:
        assert {r["method"] for r in csv.DictReader(handle)} - {"gaming-floor"} == {"raw", "corver"}
    accuracy = md[:md.index("### Measured vs reported")]
    assert "reported" not in accuracy.split("### Closed-book QA accuracy with uncertainty")[0]
    page = (out / "reported.html").read_text()
    assert "CorVer (reported, testpaper)" in page and "(reported, testpaper)" not in (out / "index.html").read_text()
    measured_ids = [r["row_id"] for r in Store(store_path).rows("1", method="corver")]
    assert measured_ids and all(f'id="row-{rid}"' in page for rid in measured_ids)  # its links resolve


def test_shipped_file_by_default_and_the_cli_option(runs, store_path, tmp_path, capsys):
    fill_paper_grid(runs, store_path, popularity=False)  # measured = the paper's Table 1 numbers
    out = tmp_path / "site"
    assert main(["publish", "--store", str(store_path), "--out", str(out)]) == 0
    found = json.loads((out / "reported.json").read_text())["comparisons"]
    compared = [c for c in found if c["measured"] is not None]
    assert {(c["model"], c["method"]) for c in compared} == {(m, k) for m in ("qwen3-4b", "qwen3-8b")
                                                             for k in ("raw", "fspo", "corver")}
    assert all(abs(c["gap"]) < 0.011 and c["inside"] for c in compared)  # macro: the paper's rounding
    assert main(["publish", "--store", str(store_path), "--out", str(out), "--reported", "none"]) == 0
    assert not (out / "reported.json").exists() and not (out / "reported.csv").exists()  # stale outputs removed
    bad = _file(tmp_path, [{"method": "corver", "model": "qwen3-4b", "set": "trivia", "value": 50.0}])
    with pytest.raises(HarnessError, match=r"entries\[0\].*'triviaqa'"):
        main(["publish", "--store", str(store_path), "--out", str(out), "--reported", str(bad)])
