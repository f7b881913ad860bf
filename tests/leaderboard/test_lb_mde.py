"""Minimum detectable differences: the formula by hand, its power by simulation, and the
tables that carry it in every format (leaderboard/tables/stats.py, uncertainty.py, ci.py)."""
from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from factrl.leaderboard import Store, publish, record_run
from factrl.leaderboard.render.formats import md_escape
from factrl.leaderboard.settings import load
from factrl.leaderboard.tables.stats import (BootstrapSettings, macro_interval, macro_mde, mde_factor, paired_interval,
                                      paired_mde)
from factrl.leaderboard.tables.build import build_tables
from factrl.leaderboard.tables import Layout
from factrl.leaderboard.testing import make_run_dir
from factrl.leaderboard.tables.uncertainty import UNDECIDED_MARK

Z_975, Z_80 = 1.959963984540054, 0.8416212335729143  # standard normal quantiles (tables)


def test_factor_is_the_sum_of_the_two_normal_quantiles():
    assert mde_factor() == pytest.approx(Z_975 + Z_80, abs=1e-9)
    assert mde_factor(power=0.5) == pytest.approx(Z_975, abs=1e-9)  # 50% power: the critical value itself


def _pair(gained: int, lost: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """a - b is +1 on `gained` questions, -1 on `lost`, 0 elsewhere."""
    a, b = np.zeros(n), np.zeros(n)
    a[:gained] = 1.0
    b[gained:gained + lost] = 1.0
    return a, b


def _by_hand(gained: int, lost: int, n: int) -> float:
    """(z + z) * sd / sqrt(n) with the sample variance written out: sum (d - mean)^2 / (n - 1)."""
    mean = (gained - lost) / n
    squares = gained * (1 - mean) ** 2 + lost * (-1 - mean) ** 2 + (n - gained - lost) * mean ** 2
    return (Z_975 + Z_80) * math.sqrt(squares / (n - 1)) / math.sqrt(n)


@pytest.mark.parametrize("gained, lost, n", [(16, 10, 400), (100, 0, 400), (3, 5, 40), (1, 0, 10)])
def test_paired_mde_by_hand(gained, lost, n):
    assert paired_mde(*_pair(gained, lost, n)) == pytest.approx(_by_hand(gained, lost, n), abs=1e-12)


@pytest.mark.parametrize("n, expected", [(100, 0.04852), (400, 0.01213), (2, 1.98101)])
def test_no_differing_question_gives_the_rule_of_three_mde_not_zero(n, expected):
    # 2.80158 * sqrt(3 / n) / sqrt(n), written out by hand (n = 2: the variance is capped at 1):
    # 100 -> 2.80158 * 0.173205 / 10 = 0.048525; 400 -> 2.80158 * 0.0866025 / 20 = 0.012131;
    # 2 -> 2.80158 * 1 / 1.414214 = 1.981010.
    a = np.r_[np.ones(n // 4), np.zeros(n - n // 4)]
    assert paired_mde(a, a.copy()) == pytest.approx(expected, abs=1e-5)
    assert paired_mde(np.ones(n), np.zeros(n)) == pytest.approx(expected, abs=1e-5)  # every one differs alike
    # a macro difference over two such sets: sqrt(2 x 3/n^2) / 2 x 2.80158
    assert macro_mde([(a, a.copy()), (a, a.copy())]) == pytest.approx(expected / math.sqrt(2), abs=1e-5)


def test_macro_mde_combines_the_per_set_variances():
    first, second = _pair(16, 10, 400), _pair(30, 12, 900)
    var1 = (_by_hand(16, 10, 400) / (Z_975 + Z_80)) ** 2  # = var_1 / n_1
    var2 = (_by_hand(30, 12, 900) / (Z_975 + Z_80)) ** 2
    assert macro_mde([first, second]) == pytest.approx((Z_975 + Z_80) * math.sqrt(var1 + var2) / 2, abs=1e-12)
    assert macro_mde([first]) == pytest.approx(paired_mde(*first))


def _population_at_its_mde(n: int, discordant: float) -> tuple[float, float]:
    """(p_gain, p_loss) of a paired population whose true difference p_gain - p_loss equals the
    MDE that paired_mde reports for n questions with the population's outcomes (a fixed point,
    found by iterating; the population is 1000 times the sample, so its MDE scales by sqrt(1000))."""
    delta, big = 0.0, 1000
    for _ in range(50):
        a, b = _pair(round(big * n * (discordant + delta) / 2), round(big * n * (discordant - delta) / 2), big * n)
        delta = paired_mde(a, b) * math.sqrt(big)
    return (discordant + delta) / 2, (discordant - delta) / 2


def _draw(rng, n, p_gain, p_loss):
    gained, lost, _ = rng.multinomial(n, [p_gain, p_loss, 1 - p_gain - p_loss])
    return _pair(int(gained), int(lost), n)


@pytest.mark.parametrize("n, discordant", [(400, 0.30), (1500, 0.12)])
def test_at_a_true_difference_equal_to_the_mde_about_80_percent_of_samples_reject(n, discordant):
    """Simulated paired samples from a population whose true difference is the MDE: the
    two-sided 5% z-test rejects in ~80% of them, and so does the tables' own rule (the paired
    bootstrap interval excludes 0)."""
    p_gain, p_loss = _population_at_its_mde(n, discordant)
    rng = np.random.default_rng(7)
    z_rejects = 0
    sims = 4000
    for _ in range(sims):
        a, b = _draw(rng, n, p_gain, p_loss)
        d = a - b
        se = d.std(ddof=1) / math.sqrt(n)
        z_rejects += abs(d.mean()) > Z_975 * se
    assert z_rejects / sims == pytest.approx(0.80, abs=0.025)  # 3 standard errors of a rate of 0.8
    boot, settings = 0, BootstrapSettings(resamples=2000, seed=0)
    for _ in range(400):
        found = paired_interval(*_draw(rng, n, p_gain, p_loss), settings)
        boot += not found.includes_zero
    assert boot / 400 == pytest.approx(0.80, abs=0.06)


def test_macro_mde_has_80_percent_power_by_simulation():
    """Two sets of different sizes, each at the same true difference, whose macro difference
    equals macro_mde: the macro bootstrap interval excludes 0 in ~80% of simulated samples."""
    sizes, discordant = (300, 800), (0.35, 0.15)
    delta = 0.0
    for _ in range(50):
        big = 1000
        pairs = [_pair(round(big * n * (s + delta) / 2), round(big * n * (s - delta) / 2), big * n)
                 for n, s in zip(sizes, discordant)]
        # Each set's variance at the sample size: var / n = (var / (big n)) * big.
        delta = macro_mde(pairs) * math.sqrt(big)
    probs = [((s + delta) / 2, (s - delta) / 2) for s in discordant]
    rng = np.random.default_rng(11)
    rejects, sims = 0, 400
    for _ in range(sims):
        pairs = [_draw(rng, n, *p) for n, p in zip(sizes, probs)]
        rejects += not macro_interval(pairs, BootstrapSettings(resamples=2000, seed=0)).includes_zero
    assert rejects / sims == pytest.approx(0.80, abs=0.06)


# -- in the tables ---------------------------------------------------------------------------
def samples(correct: list[int]) -> list[dict]:
    return [{"id": f"q{i}", "correct": bool(c), "answer": f"answer {i}"} for i, c in enumerate(correct)]


def _runs(runs, store_path, raw: dict[str, list[int]], corver: dict[str, list[int]]):
    record_run(make_run_dir(runs, method="raw", model="m", scores={k: 0.0 for k in raw},
                            samples={k: samples(v) for k, v in raw.items()}), store_path)
    record_run(make_run_dir(runs, method="corver", model="m", scores={k: 0.0 for k in corver},
                            samples={k: samples(v) for k, v in corver.items()}), store_path)


def _vectors(gained: int, lost: int, n: int, base: int = 100) -> tuple[list[int], list[int]]:
    """(raw, corver): raw right on `base` questions; corver gains `gained` and loses `lost`."""
    raw = [1 if i < base else 0 for i in range(n)]
    corver = list(raw)
    for i in range(lost):
        corver[i] = 0
    for i in range(gained):
        corver[base + i] = 1
    return raw, corver


def test_every_published_difference_carries_its_mde_and_the_undecided_mark(runs, store_path, tmp_path):
    small_raw, small_corver = _vectors(16, 10, 400)  # +1.5 pp, below its MDE (3.57 pp)
    big_raw, big_corver = _vectors(100, 0, 400)  # +25 pp, far above its MDE (6.07 pp)
    _runs(runs, store_path, {"nq_open": small_raw, "popqa": big_raw}, {"nq_open": small_corver, "popqa": big_corver})
    small, big = _by_hand(16, 10, 400) * 100, _by_hand(100, 0, 400) * 100
    boot = [paired_interval(np.array(c, float), np.array(r, float), BootstrapSettings())
            for c, r in ((small_corver, small_raw), (big_corver, big_raw))]
    small_ci, big_ci = (f"[{100 * i.low:+.2f}, {100 * i.high:+.2f}]" for i in boot)
    rows = [{k: v for k, v in r.items() if k != "_recorded"} for r in Store(store_path).rows("1")]
    table = {t.name: t for t in build_tables(rows, Layout({**load(), "focus_method": "corver"}))}["accuracy"]
    cells = next(line for line in table.lines if line.method == "corver").cells
    assert cells["nq_open"].vs_raw_mde == pytest.approx(small) and cells["nq_open"].mde == pytest.approx(small)
    assert cells["popqa"].vs_raw_mde == pytest.approx(big)
    out = tmp_path / "site"
    manifest = publish(store_path, None, out, {"focus_method": "corver"})
    assert manifest["mde"]["power"] == 0.8 and manifest["mde"]["alpha"] == 0.05 and "vs_raw.csv" in manifest["files"]
    md = (out / "leaderboard.md").read_text()
    assert f"(+1.50§{UNDECIDED_MARK})" in md and "(+25.00)" in md  # Table 1: the focus differences' marks
    assert md_escape(f"Δraw +1.50§{UNDECIDED_MARK} {small_ci} MDE {small:.2f}") in md  # uncertainty view
    assert md_escape(f"Δraw +25.00 {big_ci} MDE {big:.2f}") in md
    assert "cannot decide at this n" in md
    assert "### Difference to Raw (pp), with intervals and MDE" in md  # the difference-to-Raw view
    view = md.split("### Difference to Raw")[1]
    assert "| m | CorVer (ours) | " + md_escape(f"+1.50§{UNDECIDED_MARK} {small_ci} MDE {small:.2f}") in view
    with open(out / "accuracy.csv", newline="") as handle:
        line = {r["method"]: r for r in csv.DictReader(handle)}["corver"]
    assert float(line["nq_open_vs_raw_mde"]) == pytest.approx(small, abs=1e-5)
    assert float(line["nq_open_diff_mde"]) == pytest.approx(small, abs=1e-5)
    assert line["nq_open_vs_raw_undecided"] == "True" and line["popqa_vs_raw_undecided"] == "False"
    with open(out / "vs_raw.csv", newline="") as handle:
        view = list(csv.DictReader(handle))
    assert [r["method"] for r in view] == ["corver"]  # Raw is the reference, not a line
    assert float(view[0]["popqa"]) == pytest.approx(25.0)
    assert float(view[0]["popqa_vs_raw_mde"]) == pytest.approx(big, abs=1e-5)
    tex = (out / "tables.tex").read_text()
    assert r"\S{}$\diamond$" in tex and f"MDE {small:.2f}" in tex and "cannot decide at this n" in tex
    html = (out / "index.html").read_text()
    assert 'id="t-accuracy_ci"' in html and 'id="t-vs_raw"' in html  # both views on the page
    assert f"MDE {small:.2f} (cannot decide at this n)" in html  # the focus difference's tooltip
    assert "cannot decide at this n" in html.split('id="legend"')[1].split("</section>")[0]  # the page's one legend


def test_a_line_that_answers_as_raw_does_is_undecided_not_certain(runs, store_path, tmp_path):
    # The demo grid's case: a few training steps leave every answer as it was, so no question
    # differs. The MDE is the rule of three's 2.80158 * sqrt(3) / 100 = 4.85 pp (by hand), not 0,
    # and the difference of 0 is marked as undecided in every format.
    same = [1 if i < 8 else 0 for i in range(100)]
    _runs(runs, store_path, {"nq_open": same}, {"nq_open": list(same)})
    out = tmp_path / "site"
    publish(store_path, None, out, {"focus_method": "corver"})
    md = (out / "leaderboard.md").read_text()
    assert md_escape(f"+0.00§{UNDECIDED_MARK} [+0.00, +0.00] MDE 4.85") in md.split("### Difference to Raw")[1]
    with open(out / "vs_raw.csv", newline="") as handle:
        line = next(csv.DictReader(handle))
    assert float(line["nq_open_vs_raw_mde"]) == pytest.approx(4.8525, abs=1e-3)
    assert line["nq_open_vs_raw_undecided"] == "True"
    assert "MDE 4.85" in (out / "tables.tex").read_text()
    assert "cannot decide at this n" in (out / "index.html").read_text().split('id="legend"')[1].split("</section>")[0]


def test_macro_difference_mde_matches_the_combined_variance(runs, store_path):
    five = ("triviaqa", "nq_open", "popqa", "simpleqa", "truthfulqa")
    shapes = [(16, 10, 400), (30, 12, 500), (5, 5, 300), (40, 2, 400), (8, 20, 200)]
    raw, corver = {}, {}
    for name, (gained, lost, n) in zip(five, shapes):
        raw[name], corver[name] = _vectors(gained, lost, n, base=50)
    _runs(runs, store_path, raw, corver)
    rows = [{k: v for k, v in r.items() if k != "_recorded"} for r in Store(store_path).rows("1")]
    table = {t.name: t for t in build_tables(rows, Layout(load()))}["accuracy"]
    cell = next(line for line in table.lines if line.method == "corver").cells["macro"]
    per_set = [(_by_hand(*shape) / (Z_975 + Z_80)) ** 2 for shape in shapes]
    assert cell.vs_raw_mde == pytest.approx(100 * (Z_975 + Z_80) * math.sqrt(sum(per_set)) / 5)


def test_the_difference_to_raw_view_can_be_turned_off(runs, store_path, tmp_path):
    raw, corver = _vectors(16, 10, 400)
    _runs(runs, store_path, {"nq_open": raw}, {"nq_open": corver})
    manifest = publish(store_path, None, tmp_path / "site", {"vs_raw_table": False})
    assert "vs_raw.csv" not in manifest["files"]
    assert "Difference to Raw" not in (tmp_path / "site" / "leaderboard.md").read_text()
