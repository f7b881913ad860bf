"""Calibration in the leaderboard: a row stores its set's `calibration` (evals/calibration.py), a
cell carries Brier and ECE (the mean over its seed rows), and the published tables show them only
when some row has them, as strict accuracy is shown."""
from __future__ import annotations

import csv
import json

import pytest

from factrl.leaderboard import Store, publish, record_run
from factrl.leaderboard.settings import load
from factrl.leaderboard.tables import Layout
from factrl.leaderboard.tables.build import build_tables
from factrl.leaderboard.testing import make_run_dir


def calibration(brier: float, ece: float) -> dict:
    """A metrics.json `calibration` entry as evals/calibration.py writes it (values by hand)."""
    return {"n_with_confidence": 40, "n_total": 100, "version": "1", "bins": 10, "accuracy": 0.5,
            "mean_confidence": 0.6, "brier": {"value": brier, "stderr": 0.01, "low": brier - 0.02, "high": brier + 0.02},
            "ece": {"value": ece, "stderr": 0.02, "low": ece - 0.03, "high": ece + 0.04},
            "interval": {"method": "percentile bootstrap over the samples with a confidence", "resamples": 1000,
                         "seed": 0, "level": 0.95}}


def with_calibration(run, entry: dict) -> None:
    file = run / "eval" / "triviaqa" / "metrics.json"
    doc = json.loads(file.read_text())
    doc["calibration"] = entry
    file.write_text(json.dumps(doc))


def published(tmp_path, store_path):
    out = tmp_path / "site"
    publish(store_path, None, out)
    with open(out / "accuracy.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    return (out / "leaderboard.md").read_text(), table


def test_rows_store_it_and_cells_show_brier_and_ece(runs, store_path, tmp_path):
    record_run(make_run_dir(runs, method="raw", model="m", scores={"triviaqa": 0.5}), store_path)
    run = make_run_dir(runs, method="fspo", model="m", scores={"triviaqa": 0.55})
    with_calibration(run, calibration(0.21, 0.03))
    record_run(run, store_path)
    rows = [{k: v for k, v in r.items() if k != "_recorded"} for r in Store(store_path).rows("1")]
    stored = {r["method"]["name"]: r for r in rows}
    assert stored["fspo"]["calibration"] == calibration(0.21, 0.03) and "calibration" not in stored["raw"]
    cells = {line.method: line.cells["triviaqa"] for line in build_tables(rows, Layout(load()))[0].lines}
    assert (cells["fspo"].brier, cells["fspo"].ece) == (0.21, 0.03)
    assert cells["raw"].brier is None and cells["raw"].ece is None
    md, table = published(tmp_path, store_path)
    assert "Brier 0.210 · ECE 0.030" in md and md.count("Brier 0.") == 1  # the fspo cell of the uncertainty view
    assert "Brier · ECE: calibration of the confidences the answers state" in md
    lines = {r["method"]: r for r in table}
    assert float(lines["fspo"]["triviaqa_brier"]) == 0.21 and float(lines["fspo"]["triviaqa_ece"]) == 0.03
    assert lines["raw"]["triviaqa_brier"] == "" and lines["raw"]["triviaqa_ece"] == ""


def test_seed_rows_average_and_a_row_without_it_leaves_the_cell_empty(runs, store_path):
    from factrl.leaderboard.diagnostics import calibration_of

    a = {"calibration": calibration(0.2, 0.1)}
    b = {"calibration": calibration(0.3, 0.2)}
    assert calibration_of([a, b], "brier") == pytest.approx(0.25) and calibration_of([a, b], "ece") == pytest.approx(0.15)
    assert calibration_of([a, {}], "brier") is None and calibration_of([], "ece") is None


def test_no_columns_when_no_row_has_it(runs, store_path, tmp_path):
    record_run(make_run_dir(runs, method="raw", model="m", scores={"triviaqa": 0.5}), store_path)
    record_run(make_run_dir(runs, method="fspo", model="m", scores={"triviaqa": 0.55}), store_path)
    md, table = published(tmp_path, store_path)
    assert "Brier" not in md and "ECE" not in md
    assert not any(key.endswith(("_brier", "_ece")) for key in table[0])
