"""The "did not move" flag and the "evaluation did not move" flag (tables/movement.py, rule v2),
both ways, and the behaviour tables (tables/behaviour.py) with their paired intervals and MDEs."""
from __future__ import annotations

import csv
import itertools
import math

import numpy as np
import pytest

from factrl.leaderboard import Store, publish, record_run
from factrl.leaderboard.settings import load
from factrl.leaderboard.store import behaviour as behaviourlib
from factrl.leaderboard.tables import Layout
from factrl.leaderboard.tables.behaviour import behaviour_tables
from factrl.leaderboard.tables.build import build_tables
from factrl.leaderboard.tables.movement import EVAL_NOT_MOVED_MARK, NOT_MOVED_MARK, trend
from factrl.leaderboard.tables.stats import BootstrapSettings, ratio_interval, ratio_mde
from factrl.leaderboard.testing import add_training, eval_samples, make_run_dir


def _polyfit_p(values: list[float]) -> float:
    """The exact two-sided permutation p of the OLS slope, by numpy.polyfit over every ordering
    (an implementation independent of movement.py's)."""
    steps = list(range(1, len(values) + 1))
    observed = abs(np.polyfit(steps, values, 1)[0])
    slopes = [abs(np.polyfit(steps, list(p), 1)[0]) for p in itertools.permutations(values)]
    return sum(s >= observed - 1e-12 for s in slopes) / len(slopes)


def test_the_trend_test_is_the_exact_permutation_test():
    for values in ([1.0, 3.0, 2.0, 5.0, 4.0], [0.2, 0.1, 0.4, 0.3, 0.9, 0.7]):
        found = trend(list(range(1, len(values) + 1)), values)
        assert found.p_value == pytest.approx(_polyfit_p(values))
        assert found.slope == pytest.approx(np.polyfit(range(1, len(values) + 1), values, 1)[0])
    # Four steps cannot show a trend at 5%: even a perfect rise has p = 2/24 (itself and its reverse).
    four = trend([1, 2, 3, 4], [0.0, 1.0, 2.0, 3.0])
    assert four.p_value == pytest.approx(2 / 24) and four.flat
    assert trend([1, 2], [0.0, 5.0]).flat and trend([1, 2], [0.0, 5.0]).p_value is None  # too few steps
    rising = trend(list(range(1, 21)), [0.1 * s + 0.05 * math.sin(s) for s in range(1, 21)])  # sampled: 20 steps
    assert not rising.flat and rising.p_value < 0.001 and rising.rise == pytest.approx(1.9, abs=0.1)
    noise = trend(list(range(1, 21)), [math.sin(7.3 * s) for s in range(1, 21)])
    assert noise.flat and noise.p_value > 0.05


def _grid(tmp_path, *, rise: float, steps: int, same_verdicts: bool, log: bool = True):
    store = tmp_path / "lb.sqlite"
    raw = [i % 3 == 0 for i in range(60)]
    tuned = raw if same_verdicts else [i % 2 == 0 for i in range(60)]
    record_run(make_run_dir(tmp_path / "runs", method="raw", model="m", scores={"demo": 0.0},
                            samples={"demo": eval_samples(60, raw)}), store)
    run = make_run_dir(tmp_path / "runs", method="corver", model="m", scores={"demo": 0.0}, steps=steps,
                       samples={"demo": eval_samples(60, tuned)}, train_phases={"rollout": 60.0})
    add_training(run, method="corver", steps=steps, rise=rise, seed=3)
    if not log:
        (run / "train" / "log.jsonl").unlink()
    record_run(run, store)
    site = tmp_path / "site"
    publish(store, None, site, {})
    with open(site / "accuracy.csv", newline="") as handle:
        flagged = {r["method"]: r["did_not_move"] for r in csv.DictReader(handle)}
    return flagged["corver"] == "true", (site / "leaderboard.md").read_text(), (site / "index.html").read_text()


def test_a_flat_curve_with_raws_verdicts_is_flagged_in_every_format(tmp_path):
    flagged, md, html = _grid(tmp_path, rise=0.0, steps=6, same_verdicts=True)
    assert flagged
    assert f"| CorVer {NOT_MOVED_MARK} |" in md and f"- {NOT_MOVED_MARK} m / CorVer: did not move: reward flat" in md
    assert "every evaluation verdict equals Raw&#x27;s (60 on demo questions)" in html
    assert '<span class="moved" title="did not move: reward flat within noise over 6 steps' in html


@pytest.mark.parametrize("rise, same, why", [(0.4, True, "reward moved over 10 steps"),
                                             (0.0, False, "verdicts differ from Raw&#x27;s on 1 of 1 set(s)")])
def test_a_rising_curve_or_other_verdicts_are_not_flagged(tmp_path, rise, same, why):
    flagged, md, html = _grid(tmp_path, rise=rise, steps=10, same_verdicts=same)
    assert not flagged and f"| CorVer {NOT_MOVED_MARK}" not in md and '<span class="moved"' not in html
    (page,) = [p for p in (tmp_path / "site" / "viewer" / "runs").glob("*corver*.html")]
    assert why in page.read_text()  # the run page says what moved


def test_a_run_without_a_curve_is_not_assessed(tmp_path):
    flagged, _, _ = _grid(tmp_path, rise=0.0, steps=6, same_verdicts=True, log=False)
    assert not flagged
    (page,) = [p for p in (tmp_path / "site" / "viewer" / "runs").glob("*corver*.html")]
    assert "not assessed: the row keeps no training curve" in page.read_text()


RAW = [i % 3 == 0 for i in range(60)]  # eval_samples: an answer is empty (abstained) when i % 7 == 3 and wrong
WRONG = [i for i in range(60) if i % 3 and i % 7 != 3]  # answered wrong by Raw


def _publish_pair(tmp_path, tuned: list[dict]):
    """Raw and a CorVer run whose reward rises over 10 steps (permutation p < 0.001), evaluated
    on the same 60 questions: (accuracy.csv line of CorVer, leaderboard.md, index.html, run page, tables.tex)."""
    store = tmp_path / "lb.sqlite"
    record_run(make_run_dir(tmp_path / "runs", method="raw", model="m", scores={"demo": 0.0},
                            samples={"demo": eval_samples(60, RAW)}), store)
    run = make_run_dir(tmp_path / "runs", method="corver", model="m", scores={"demo": 0.0}, steps=10,
                       samples={"demo": tuned}, train_phases={"rollout": 60.0})
    add_training(run, method="corver", steps=10, rise=0.4, seed=3)
    record_run(run, store)
    site = tmp_path / "site"
    publish(store, None, site, {})
    with open(site / "accuracy.csv", newline="") as handle:
        line = next(r for r in csv.DictReader(handle) if r["method"] == "corver")
    (page,) = (site / "viewer" / "runs").glob("*corver*.html")
    return (line, (site / "leaderboard.md").read_text(), (site / "index.html").read_text(), page.read_text(),
            (site / "tables.tex").read_text())


def _mde_pp(mine: list[float], raw: list[float]) -> float:
    """The MDE by its formula (z_0.975 + z_0.80) sd(d) / sqrt(n), in pp: independent of stats.py."""
    d = np.asarray(mine, dtype=float) - np.asarray(raw, dtype=float)
    return 100 * 2.80158 * np.std(d, ddof=1) / len(d) ** 0.5


def test_an_evaluation_within_every_mde_is_flagged_with_its_metrics(tmp_path):
    # Five more right answers: accuracy +8.33 pp with a bootstrap interval above 0, yet below its
    # MDE (10.1 pp at n = 60): "beyond its MDE" is |Δ| >= MDE, so the line is flagged.
    tuned = eval_samples(60, [c or i in WRONG[:5] for i, c in enumerate(RAW)])
    line, md, html, page, tex = _publish_pair(tmp_path, tuned)
    assert line["evaluation_did_not_move"] == "true" and line["did_not_move"] == ""  # the reward moved: not ∅
    assert float(line["demo_vs_raw_low"]) > 0  # the interval excludes 0; the MDE rule still flags it
    raw = eval_samples(60, RAW)
    mde = _mde_pp([s["correct"] for s in tuned], [s["correct"] for s in raw])
    assert float(line["demo_vs_raw"]) == pytest.approx(100 * 5 / 60) and float(line["demo_vs_raw_mde"]) == pytest.approx(mde, rel=1e-4)
    assert f"| CorVer {EVAL_NOT_MOVED_MARK} |" in md
    (note,) = [n for n in md.splitlines() if n.startswith(f"- {EVAL_NOT_MOVED_MARK} m / CorVer: ")]
    assert "evaluation did not move: reward moved over 10 steps" in note and "permutation p &lt; 0.001" in note
    assert f"on Demo, accuracy Δ +8.33 pp (MDE {mde:.2f})" in note
    for metric in ("format rate Δ +0.00 pp", "abstention Δ +0.00 pp", "answer words Δ +0.0 words",
                   "completion words Δ +0.0 words", "answer accuracy Δ +9.26 pp"):  # 5 / 54 attempted
        assert metric in note
    assert f"- {EVAL_NOT_MOVED_MARK} = evaluation did not move (rule v2)" in md  # the legend, before the notes
    assert md.index(f"- {EVAL_NOT_MOVED_MARK} = ") < md.index(f"- {EVAL_NOT_MOVED_MARK} m / CorVer")
    assert f"- {NOT_MOVED_MARK} = " not in md  # no ∅ line, no ∅ legend
    assert (f'<span class="moved eval" title="evaluation did not move: reward moved over 10 steps') in html
    assert f"{EVAL_NOT_MOVED_MARK} evaluation did not move</span>" in html
    assert f'<summary><span class="standin">{EVAL_NOT_MOVED_MARK}</span> evaluation did not move</summary>' in html  # legend
    assert f'<section class="box flag" id="movement"><b>{EVAL_NOT_MOVED_MARK} Evaluation did not move:</b> reward moved' in page
    assert r"CorVer \textsuperscript{$\approx$}" in tex


def _abstaining() -> list[dict]:
    tuned = eval_samples(60, RAW)
    for i in WRONG[:15]:  # abstains on fifteen questions Raw answered wrong: accuracy unchanged
        tuned[i].update(answer="", na=True, correct=False, format_ok=False, answer_words=0, completion_words=2)
    return tuned


@pytest.mark.parametrize("tuned, named, unnamed", [
    (eval_samples(60, [c or i in WRONG[:8] for i, c in enumerate(RAW)]),
     ("on Demo, accuracy Δ +13.33 pp (MDE", "answer accuracy Δ +14.81 pp (MDE"), ("format rate", "abstention")),
    (_abstaining(), ("on Demo, format rate Δ -25.00 pp (MDE", "abstention Δ +25.00 pp (MDE"), ("accuracy Δ +0.00",))])
def test_a_metric_beyond_its_mde_is_not_flagged_and_named(tmp_path, tuned, named, unnamed):
    line, md, html, page, _ = _publish_pair(tmp_path, tuned)
    assert line["evaluation_did_not_move"] == "" and line["did_not_move"] == ""
    assert f"CorVer {EVAL_NOT_MOVED_MARK}" not in md and f"- {EVAL_NOT_MOVED_MARK} = " not in md
    assert '<span class="moved' not in html
    (box,) = [b for b in page.split("<section") if 'id="movement"' in b]
    assert "<b>Movement:</b> moved: reward moved over 10 steps" in box and "evaluation moved: |Δraw| &gt;= MDE" in box
    assert all(text in box for text in named) and not any(text in box for text in unnamed)


def test_ratio_interval_is_the_index_bootstrap():
    rng = np.random.default_rng(1)
    n = 40
    att_a, att_b = rng.random(n) < 0.8, rng.random(n) < 0.6
    cor_a, cor_b = att_a & (rng.random(n) < 0.6), att_b & (rng.random(n) < 0.4)
    found = ratio_interval(cor_a, att_a, cor_b, att_b, BootstrapSettings(20_000, 0, 0.95))
    # The plain index bootstrap: resample question indices, recompute both ratios.
    draws = []
    for _ in range(20_000):
        i = rng.integers(0, n, n)
        if att_a[i].sum() and att_b[i].sum():
            draws.append(cor_a[i].sum() / att_a[i].sum() - cor_b[i].sum() / att_b[i].sum())
    low, high = np.quantile(draws, [0.025, 0.975])
    assert found.diff == pytest.approx(cor_a.sum() / att_a.sum() - cor_b.sum() / att_b.sum())
    assert found.low == pytest.approx(low, abs=0.02) and found.high == pytest.approx(high, abs=0.02)
    # Delta method by hand: influence (c - r a) / mean(a) per line, MDE = 2.8016 sd(diff) / sqrt(n).
    infl = [(c - c.sum() / a.sum() * a) / a.mean() for c, a in ((cor_a * 1.0, att_a * 1.0), (cor_b * 1.0, att_b * 1.0))]
    assert ratio_mde(cor_a, att_a, cor_b, att_b) == pytest.approx(2.80158 * np.std(infl[0] - infl[1], ddof=1) / n ** 0.5,
                                                                rel=1e-4)
    assert ratio_interval(cor_a, att_a * 0, cor_b, att_b, BootstrapSettings()) is None  # nothing attempted


def test_behaviour_tables_pair_each_line_with_raw(tmp_path):
    store = tmp_path / "lb.sqlite"
    raw = eval_samples(30, [i % 3 == 0 for i in range(30)])
    tuned = eval_samples(30, [i % 3 == 0 for i in range(30)])
    for i in range(10):  # the tuned line abstains on ten questions Raw got wrong or right
        tuned[i].update(answer="", na=True, correct=False, format_ok=False, answer_words=0, completion_words=2)
    for method, rows in (("raw", raw), ("knowrl", tuned)):
        record_run(make_run_dir(tmp_path / "runs", method=method, model="m", scores={"demo": 0.0},
                                samples={"demo": rows}), store)
    stored = [{k: v for k, v in r.items() if not k.startswith("_")} for r in Store(store).rows()]
    assert behaviourlib.decode(stored[0]["behaviour"])["answer_words"].sum() > 0
    layout = Layout({**load(), "floors": {"enabled": False}})
    accuracy = build_tables(stored, layout)[0]
    (table,) = behaviour_tables(accuracy, stored, layout)
    line = next(line for line in table.lines if line.method == "knowrl")
    na_raw = sum(s["na"] for s in raw) / 30
    abstention = line.cells["abstention"]
    assert abstention.value == pytest.approx(100 * (na_raw + sum(not raw[i]["na"] for i in range(10)) / 30))
    assert abstention.vs_raw[0] == pytest.approx(abstention.value - 100 * na_raw)
    assert abstention.vs_raw[1] > 0 and abstention.vs_raw_mde > 0  # every change in one direction: interval > 0
    answered = [s for s in tuned if not s["na"]]
    assert line.cells["answer_accuracy"].value == pytest.approx(100 * sum(s["correct"] for s in answered) / len(answered))
    assert "Δraw +" in abstention.text and "MDE" in abstention.text
    assert next(r for r in table.lines if r.method == "raw").cells["format"].vs_raw is None  # Raw: no difference
    length = line.cells["length"]  # completion words: shorter on the ten abstentions, the same elsewhere
    shorter = sum(raw[i]["completion_words"] - 2 for i in range(10)) / 30
    assert length.vs_raw[0] == pytest.approx(-shorter) and length.vs_raw[2] < 0 and length.vs_raw_mde > 0
