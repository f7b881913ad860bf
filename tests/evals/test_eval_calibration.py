"""Calibration of stated confidences (evals/calibration.py): Brier and ECE of the samples whose
completion states a confidence, for any method, with intervals, written as metrics.json
`calibration` by every scoring; absent when no sample states one. Expected values are worked out
by hand in the comments, on samples written by hand."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from factrl.evals.calibration import calibration_summary, ece
from factrl.evals.cli import score_main
from factrl.evals.sets import load_set

# (answer is the gold?, confidence block(s)) of ten hand-written completions on the demo set
PLAN = [(True, "<confidence>0.9</confidence>"),     # q 0.9,  c 1: (q-c)^2 0.01,   bin 9
        (False, "<confidence>0.9</confidence>"),    # q 0.9,  c 0: 0.81,           bin 9
        (True, "<confidence> 0.95 </confidence>"),  # q 0.95, c 1: 0.0025,         bin 9
        (False, "<confidence>0.3</confidence>"),    # q 0.3,  c 0: 0.09,           bin 3 (the tenth opens its bin)
        (True, "<confidence>0.35</confidence>"),    # q 0.35, c 1: 0.4225,         bin 3
        (False, "<confidence>0</confidence>"),      # q 0,    c 0: 0,              bin 0
        (True, "<confidence>1.0</confidence>"),     # q 1,    c 1: 0,              bin 9 (1.0 in the last bin)
        (True, ""),                                 # no confidence: left out
        (True, "<confidence>90%</confidence>"),     # malformed: left out
        (False, "<confidence>0.2</confidence> <confidence>0.6</confidence>")]  # the last: q 0.6, c 0: 0.36, bin 6
# Brier = (0.01 + 0.81 + 0.0025 + 0.09 + 0.4225 + 0 + 0 + 0.36) / 8 = 1.695 / 8 = 0.211875
# ECE: bin 9 |(1+0+1+1) - (0.9+0.9+0.95+1.0)| = 0.75; bin 3 |1 - 0.65| = 0.35; bin 6 |0 - 0.6| = 0.6;
#      bin 0 |0 - 0| = 0: (0.75 + 0.35 + 0.6) / 8 = 0.2125
# Brier's standard error: squared deviations from 0.211875 sum to 0.613284375 (by hand, eight terms),
#      so sqrt(0.613284375 / 7 / 8)
BRIER, ECE, BRIER_SE = 0.211875, 0.2125, math.sqrt(0.613284375 / 7 / 8)


def completions():
    records = load_set("demo", limit=len(PLAN)).records
    answers = [r.references[0] if gold else "Atlantis" for r, (gold, _) in zip(records, PLAN)]
    return records, [f"<think>r</think><answer>{a}</answer> <analysis>x</analysis> {block}".rstrip()
                     for a, (_, block) in zip(answers, PLAN)]


def test_brier_and_ece_of_hand_written_samples():
    _, texts = completions()
    samples = [{"id": str(i), "completion": t, "correct": gold} for i, (t, (gold, _)) in enumerate(zip(texts, PLAN))]
    found = calibration_summary(samples)
    assert found["n_with_confidence"] == 8 and found["n_total"] == 10 and found["bins"] == 10
    assert found["brier"]["value"] == pytest.approx(BRIER) and found["ece"]["value"] == pytest.approx(ECE)
    assert found["brier"]["stderr"] == pytest.approx(BRIER_SE)
    assert found["accuracy"] == pytest.approx(4 / 8) and found["mean_confidence"] == pytest.approx(5.0 / 8)
    for name in ("brier", "ece"):
        item = found[name]
        assert 0.0 <= item["low"] <= item["high"] <= 1.0 and item["stderr"] > 0
    assert found["brier"]["low"] <= BRIER <= found["brier"]["high"]
    assert calibration_summary(samples) == found  # a fixed seed: the same intervals every time


def test_the_bins_are_left_closed_at_each_tenth():
    # 0.3 wrong and 0.35 right share bin 3: |1 - 0.65| / 2 = 0.175. With 0.3 in the bin below (the
    # release's float edges) it would be (0.3 + 0.65) / 2 = 0.475.
    assert ece(np.array([0.3, 0.35]), np.array([0.0, 1.0])) == pytest.approx(0.175)
    assert ece(np.array([0.7, 0.75]), np.array([0.0, 1.0])) == pytest.approx(0.225)  # bin 7: |1 - 1.45| / 2
    assert ece(np.array([1.0, 0.95]), np.array([1.0, 1.0])) == pytest.approx(0.025)  # bin 9: |2 - 1.95| / 2


def test_perfect_confidence_has_zero_error_and_a_point_interval():
    samples = [{"completion": "<answer>a</answer><confidence>1</confidence>", "correct": True}] * 5
    found = calibration_summary(samples)
    assert found["brier"] == {"value": 0.0, "stderr": 0.0, "low": 0.0, "high": 0.0}
    assert found["ece"]["value"] == 0.0 and (found["ece"]["low"], found["ece"]["high"]) == (0.0, 0.0)


def test_none_without_a_stated_confidence_or_a_verdict():
    assert calibration_summary([{"completion": "<answer>a</answer>", "correct": True}]) is None
    assert calibration_summary([{"completion": "<confidence>0.5</confidence>", "em": 1.0}]) is None  # multi-hop
    assert calibration_summary([]) is None


def test_score_writes_calibration_beside_the_metrics(tmp_path, capsys):
    records, texts = completions()
    preds = tmp_path / "demo" / "generations.jsonl"
    preds.parent.mkdir()
    preds.write_text("".join(json.dumps({"id": r.id, "completion": t}) + "\n" for r, t in zip(records, texts)),
                     encoding="utf-8")
    assert score_main([str(preds), "--limit", str(len(PLAN))]) == 0
    doc = json.loads((tmp_path / "demo" / "metrics.json").read_text(encoding="utf-8"))
    assert doc["metrics"]["accuracy"]["value"] == 6 / 10 and "calibration" not in doc["metrics"]
    assert doc["calibration"]["n_with_confidence"] == 8 and doc["calibration"]["n_total"] == 10
    assert doc["calibration"]["brier"]["value"] == pytest.approx(BRIER)
    assert doc["calibration"]["ece"]["value"] == pytest.approx(ECE)
    assert "calibration: 8 of 10 state a confidence; Brier 0.2119, ECE 0.2125" in capsys.readouterr().out


def test_score_writes_no_calibration_when_no_answer_states_one(tmp_path):
    records = load_set("demo", limit=3).records
    preds = tmp_path / "demo" / "generations.jsonl"
    preds.parent.mkdir()
    preds.write_text("".join(json.dumps({"id": r.id, "completion": f"<answer>{r.references[0]}</answer>"}) + "\n"
                             for r in records), encoding="utf-8")
    assert score_main([str(preds), "--limit", "3"]) == 0
    assert "calibration" not in json.loads((tmp_path / "demo" / "metrics.json").read_text(encoding="utf-8"))
