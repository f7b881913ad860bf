"""Paired bootstrap intervals against hand computations, and seed aggregation in the tables."""
from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from factrl.leaderboard import Store, publish, record_run
from factrl.leaderboard.render.formats import md_escape
from factrl.leaderboard.store.outcomes import decode, encode
from factrl.leaderboard.settings import load
from factrl.leaderboard.tables.stats import BootstrapSettings, macro_interval, paired_interval, resampled_means
from factrl.leaderboard.tables.build import build_tables
from factrl.leaderboard.tables import Layout
from factrl.leaderboard.testing import make_run_dir
from factrl.leaderboard.tables.uncertainty import NOISE_MARK, UNDECIDED_MARK

SETTINGS = BootstrapSettings(resamples=10_000, seed=0, level=0.95)


def tables_of(store_path, **layout):
    rows = [{k: v for k, v in r.items() if k != "_recorded"} for r in Store(store_path).rows("1")]
    return {t.name: t for t in build_tables(rows, Layout({**load(), **layout}))}


def samples(correct: list[int], prefix: str = "q") -> list[dict]:
    return [{"id": f"{prefix}{i}", "correct": bool(c), "answer": f"answer {i}"} for i, c in enumerate(correct)]


def binomial_quantile(n: int, p: float, q: float) -> int:
    """Smallest k with P(X <= k) >= q for X ~ Binomial(n, p), by hand (math.comb)."""
    total = 0.0
    for k in range(n + 1):
        total += math.comb(n, k) * p ** k * (1 - p) ** (n - k)
        if total >= q - 1e-12:
            return k
    return n


def test_two_questions_by_hand():
    """d = (1, 0): a resample holds the first question 0, 1 or 2 times (1/4, 1/2, 1/4), so the
    resampled means are 0, 0.5, 1 and the 2.5% / 97.5% quantiles are exactly 0 and 1."""
    found = paired_interval(np.array([1.0, 0.0]), np.array([0.0, 0.0]), SETTINGS)
    assert found.diff == 0.5 and (found.low, found.high) == (0.0, 1.0) and found.includes_zero
    means = resampled_means(np.array([1.0, 0.0]), SETTINGS)
    shares = [np.mean(means == v) for v in (0.0, 0.5, 1.0)]
    assert shares == pytest.approx([0.25, 0.5, 0.25], abs=0.02)


def test_small_paired_example_matches_the_exact_bootstrap_distribution():
    """Eight paired questions, d = a - b has one -1, four 0 and three +1. The exact bootstrap
    distribution of the resampled mean is (c+ - c-)/8 with (c-, c0, c+) ~ Multinomial(8; 1/8,
    4/8, 3/8); its 2.5% / 97.5% quantiles, enumerated here, bound the Monte-Carlo interval."""
    a = np.array([1, 1, 1, 0, 0, 1, 0, 1], dtype=float)
    b = np.array([1, 0, 1, 0, 1, 0, 0, 0], dtype=float)
    found = paired_interval(a, b, SETTINGS)
    assert found.diff == pytest.approx(0.25)
    dist: dict[int, float] = {}
    for minus in range(9):
        for plus in range(9 - minus):
            zero = 8 - minus - plus
            prob = (math.factorial(8) / (math.factorial(minus) * math.factorial(zero) * math.factorial(plus))
                    * (1 / 8) ** minus * (4 / 8) ** zero * (3 / 8) ** plus)
            dist[plus - minus] = dist.get(plus - minus, 0.0) + prob
    cdf, low, high = 0.0, None, None
    for value in sorted(dist):
        cdf += dist[value]
        if low is None and cdf >= 0.025:
            low = value / 8
        if high is None and cdf >= 0.975:
            high = value / 8
    assert (low, high) == (-0.25, 0.75)  # the hand enumeration itself
    assert abs(found.low - low) <= 1 / 8 and abs(found.high - high) <= 1 / 8
    # The multinomial draw is the index bootstrap: compare with drawing R x n indices directly.
    rng = np.random.default_rng(1)
    naive = (a - b)[rng.integers(0, 8, size=(10_000, 8))].mean(axis=1)
    assert np.quantile(naive, [0.025, 0.975]) == pytest.approx([found.low, found.high], abs=1 / 8)
    means = resampled_means(a - b, SETTINGS)
    assert means.mean() == pytest.approx(0.25, abs=0.01)
    assert means.std() == pytest.approx(np.std(a - b) / math.sqrt(8), rel=0.05)


def test_degenerate_pair_is_an_exact_binomial():
    """When b is never right where a is wrong, d is 0/1 and the resampled count of +1 is
    exactly Binomial(n, p): the interval is the binomial quantiles / n."""
    n, plus = 200, 60
    a = np.array([1.0] * plus + [0.0] * (n - plus))
    b = np.zeros(n)
    found = paired_interval(a, b, SETTINGS)
    low, high = binomial_quantile(n, 0.3, 0.025) / n, binomial_quantile(n, 0.3, 0.975) / n
    assert found.diff == pytest.approx(0.3)
    assert abs(found.low - low) <= 1 / n and abs(found.high - high) <= 1 / n
    counts = resampled_means(a - b, SETTINGS) * n
    assert counts.mean() == pytest.approx(n * 0.3, rel=0.01) and counts.var() == pytest.approx(n * 0.3 * 0.7, rel=0.05)
    same = paired_interval(np.ones(n), np.zeros(n), SETTINGS)  # every question differs by one
    assert (same.low, same.high) == (1.0, 1.0) and not same.includes_zero
    assert paired_interval(a, b, SETTINGS) == found  # fixed seed: reproducible


def test_macro_interval_averages_independent_sets():
    a1, b1 = np.ones(50), np.zeros(50)
    a2, b2 = np.zeros(50), np.zeros(50)
    found = macro_interval([(a1, b1), (a2, b2)], SETTINGS)
    assert (found.diff, found.low, found.high) == (0.5, 0.5, 0.5)


def test_outcomes_round_trip_and_refuse_non_binary_scores():
    items = samples([1, 0, 1, 1, 0, 0, 0, 1, 1])
    vector = encode(items)
    assert vector["n"] == 9 and list(decode(vector)) == [1, 0, 1, 1, 0, 0, 0, 1, 1]
    assert encode([{"id": "a", "score": 0.5}]) is None


def _paired_runs(runs, store_path, raw: list[int], corver: list[int], seeds=(42,)):
    record_run(make_run_dir(runs, method="raw", model="m", scores={"nq_open": 0.0},
                            samples={"nq_open": samples(raw)}), store_path)
    for seed in seeds:
        record_run(make_run_dir(runs, method="corver", model="m", seed=seed, scores={"nq_open": 0.0},
                                samples={"nq_open": samples(corver)}), store_path)


def test_focus_difference_carries_a_paired_interval_and_the_noise_mark(runs, store_path, tmp_path):
    n = 400
    raw = [1 if i < 160 else 0 for i in range(n)]  # 40%
    corver = [1 if i < 150 or 300 <= i < 316 else 0 for i in range(n)]  # 41.5%: 16 gained, 10 lost
    _paired_runs(runs, store_path, raw, corver)
    table = tables_of(store_path, focus_method="corver")["accuracy"]
    line = next(line for line in table.lines if line.method == "corver")
    cell = line.cells["nq_open"]
    assert cell.diff == pytest.approx(1.5) and cell.ci is not None and cell.ci[0] <= 0 <= cell.ci[1]
    assert cell.vs_raw[0] == pytest.approx(1.5) and cell.vs_raw[1] == pytest.approx(cell.ci[0])
    assert cell.n == n and cell.se == pytest.approx(100 * math.sqrt(0.415 * 0.585 / (n - 1)))
    assert any("10000 resamples" in note and "seed 0" in note for note in table.notes)
    out = tmp_path / "site"
    manifest = publish(store_path, None, out, {"focus_method": "corver"})
    assert manifest["bootstrap"]["resamples"] == 10_000 and manifest["bootstrap"]["seed"] == 0
    md = (out / "leaderboard.md").read_text()
    # 16 gained and 10 lost of 400 is also below its MDE (test_lb_mde.py): both marks.
    assert f"(+1.50{NOISE_MARK}{UNDECIDED_MARK})" in md and md_escape("[1 seed]") in md and "NQ-Open (n=400)" in md
    with open(out / "accuracy.csv", newline="") as handle:
        rows = {r["method"]: r for r in csv.DictReader(handle)}
    assert float(rows["corver"]["nq_open_vs_raw_low"]) <= 0 <= float(rows["corver"]["nq_open_vs_raw_high"])
    assert rows["corver"]["nq_open_n"] == "400"


def test_clear_difference_is_not_marked(runs, store_path):
    n = 400
    _paired_runs(runs, store_path, [1 if i < 100 else 0 for i in range(n)], [1 if i < 200 else 0 for i in range(n)])
    cell = next(line for line in tables_of(store_path, focus_method="corver")["accuracy"].lines
                if line.method == "corver").cells["nq_open"]
    assert cell.diff == pytest.approx(25.0) and cell.ci[0] > 0  # 100 questions gained, none lost


def test_rows_without_outcomes_get_no_interval_and_the_legend_says_so(runs, store_path):
    record_run(make_run_dir(runs, method="raw", model="m", scores={"triviaqa": 0.5}), store_path)
    record_run(make_run_dir(runs, method="corver", model="m", scores={"triviaqa": 0.6}), store_path)
    table = tables_of(store_path, focus_method="corver")["accuracy"]
    cell = next(line for line in table.lines if line.method == "corver").cells["triviaqa"]
    assert cell.diff == pytest.approx(10.0) and cell.ci is None
    assert any(note.startswith("Differences without an interval") for note in table.notes)


def test_seed_runs_aggregate_to_mean_and_std(runs, store_path, tmp_path):
    record_run(make_run_dir(runs, method="raw", model="m", scores={"triviaqa": 0.30}), store_path)
    for seed, score in ((42, 0.40), (43, 0.44), (44, 0.48)):
        record_run(make_run_dir(runs, method="corver", model="m", seed=seed, scores={"triviaqa": score}), store_path)
    table = tables_of(store_path)["accuracy"]
    corver = next(line for line in table.lines if line.method == "corver")
    cell = corver.cells["triviaqa"]
    assert corver.seeds == 3 and cell.seeds == 3 and len(cell.row_ids) == 3 and len(corver.run_ids) == 3
    assert cell.text == "44.00" and cell.std == pytest.approx(4.0) and cell.se is None
    assert corver.method_label == "CorVer (3 seeds)"
    raw = next(line for line in table.lines if line.method == "raw")
    assert raw.seeds == 1 and raw.cells["triviaqa"].se is not None
    publish(store_path, None, tmp_path / "site")
    md = (tmp_path / "site" / "leaderboard.md").read_text()
    assert md_escape("CorVer [3 seeds]") in md and "44.00 ±4.00" in md and md_escape("Raw [1 seed]") in md


def test_seed_lines_pair_their_per_question_means(runs, store_path):
    n = 200
    raw = [1 if i < 80 else 0 for i in range(n)]
    _paired_runs(runs, store_path, raw, [1 if i < 120 else 0 for i in range(n)], seeds=(1, 2))
    cell = next(line for line in tables_of(store_path, focus_method="corver")["accuracy"].lines
                if line.method == "corver").cells["nq_open"]
    assert cell.seeds == 2 and cell.std == pytest.approx(0.0) and cell.ci[0] > 0
