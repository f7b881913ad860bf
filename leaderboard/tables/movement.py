"""The "did not move" flag: a trained line whose training and evaluation both look like no training.

A trainer whose updates never reached the model publishes a line that scores exactly what Raw
scores; a short laptop run can do the same honestly. Either way a reader must not take the line
for a method's effect. A trained line of the accuracy table is flagged `NOT_MOVED_MARK` when,
for the run the line uses (its best seed; every seed run of a multi-seed line):

1. **its reward curve is flat within noise**: the per-step mean reward r_1..r_T (train/log.jsonl
   `reward`, kept in the row's `training`, leaderboard/curves.py) shows no trend, i.e. the
   ordinary least-squares slope of r_t on t is not significant in a two-sided permutation test
   at level TREND_ALPHA = 0.05: p = share of orderings of the T values whose |slope| is at least
   the observed |slope| (every ordering when T <= EXACT_MAX_STEPS = 8, else TREND_PERMUTATIONS =
   10,000 random orderings, seed 0, p = (1 + hits) / (1 + 10,000)). The noise is the curve's own
   step-to-step scatter (different questions each step, sampled completions), with no
   distributional assumption; a run of fewer than 3 steps, or of 4 (whose smallest exact p is
   2/24 = 0.083), cannot show a trend at 5% and counts as flat; and
2. **its evaluation verdicts equal Raw's on every question**: for every set of the table where
   both the line and Raw of the same model store per-question outcomes of the same questions
   (`outcomes`, equal ids hash), the correctness vectors are identical, and at least one set was
   compared.

A line without a reward curve (recorded before rows kept `training`) or without paired outcomes
is not flagged `NOT_MOVED_MARK`; the movement note says what could not be checked.

A trained line not flagged `NOT_MOVED_MARK` is flagged `EVAL_NOT_MOVED_MARK`, "evaluation did not
move" (rule v2), when no metric of its evaluation differs from Raw's **by at least its MDE**:
every metric the page shows with an MDE against Raw of the same model (the accuracy table's cells,
Macro included when the table has two sets or more, and the behaviour table's format rate, abstention, answer words, completion words
and answer accuracy on each set, tables/behaviour.py) has |Δraw| < MDE, and at least one such
metric exists. Its reason names the reward's trend and every compared metric with its Δ and MDE;
a line with some |Δraw| >= MDE says "moved" and which metric(s). A curve that moved does not
lift the flag (a reward can rise on the training questions and change nothing on held-out
ones); a missing curve does not prevent it (the evaluation is what it checks).

"Beyond its MDE" is |Δ| >= MDE, not "the bootstrap interval excludes 0". The MDE is the
difference this many questions resolve at 80% power (tables/stats.py), and the tables mark a
difference below it UNDECIDED_MARK ("cannot decide at this n"): a line flagged here is exactly a
line whose every difference to Raw carries that mark, so the flag and the tables never disagree,
and it needs no resampling (one rule for every metric, the ratio included). An interval can
exclude 0 while |Δ| < MDE (the MDE is about 1.4 interval half-widths); such a difference still
counts as not moved, and the reason's Δ and MDE, with the interval in the tables, show it.

Changelog: v1 (2026-12-04) the `NOT_MOVED_MARK` flag; v2 (2026-12-05) adds the
`EVAL_NOT_MOVED_MARK` flag. Rule version MOVEMENT_VERSION.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import curves as curvelib
from ..store import outcomes as outcomelib
from . import behaviour as behaviourlib

MOVEMENT_VERSION = "2"
NOT_MOVED_MARK = "∅"
EVAL_NOT_MOVED_MARK = "≈"
TREND_ALPHA = 0.05
EXACT_MAX_STEPS = 8
TREND_PERMUTATIONS = 10_000
TREND_SEED = 0
MIN_STEPS = 3


@dataclass(frozen=True)
class Trend:
    steps: int
    slope: float | None  # reward per step (OLS)
    rise: float | None  # slope x (last step - first step): the fitted change over the run
    p_value: float | None  # two-sided permutation p of the slope; None below MIN_STEPS
    flat: bool

    def describe(self) -> str:
        if self.slope is None or self.p_value is None:
            return f"over {self.steps} logged step(s), too few to show a trend"
        p = "p < 0.001" if self.p_value < 0.001 else f"p = {self.p_value:.3f}"  # never "p = 0.000"
        return (f"{'flat within noise' if self.flat else 'moved'} over {self.steps} steps: slope {self.slope:+.4f} "
                f"per step (fitted change {self.rise:+.3f}), permutation {p}")


def _slopes(steps: np.ndarray, orderings: np.ndarray) -> np.ndarray:
    """OLS slope of each row of `orderings` (values) on `steps`."""
    centred = steps - steps.mean()
    return orderings @ centred / float(centred @ centred)


def trend(steps: list[int], values: list[float]) -> Trend:
    """The permutation test of the module docstring on one reward curve."""
    t = len(values)
    if t < MIN_STEPS:
        return Trend(t, None, None, None, True)
    x = np.asarray(steps, dtype=float)
    y = np.asarray(values, dtype=float)
    observed = float(_slopes(x, y[None, :])[0])
    if t <= EXACT_MAX_STEPS:
        orderings = np.array(list(itertools.permutations(y)))
        hits = int(np.sum(np.abs(_slopes(x, orderings)) >= abs(observed) - 1e-12))
        p = hits / len(orderings)
    else:
        rng = np.random.default_rng(TREND_SEED)
        orderings = np.array([rng.permutation(y) for _ in range(TREND_PERMUTATIONS)])
        hits = int(np.sum(np.abs(_slopes(x, orderings)) >= abs(observed) - 1e-12))
        p = (1 + hits) / (1 + TREND_PERMUTATIONS)
    return Trend(t, observed, observed * (x[-1] - x[0]), p, p >= TREND_ALPHA)


def run_trend(training: dict[str, Any] | None) -> Trend | None:
    """The trend of a row's reward curve, or None when the row keeps none."""
    key = curvelib.reward_key(training)
    if key is None:
        return None
    steps, values = curvelib.series(training, key)
    return trend(steps, values) if values else None


@dataclass(frozen=True)
class Movement:
    flagged: bool  # NOT_MOVED_MARK: flat reward and Raw's verdicts (rule v1)
    text: str  # why flagged, or what moved, or what could not be checked
    evaluation_flat: bool = False  # EVAL_NOT_MOVED_MARK: no metric beyond its MDE (rule v2; never with `flagged`)

    @property
    def mark(self) -> str:
        return NOT_MOVED_MARK if self.flagged else EVAL_NOT_MOVED_MARK if self.evaluation_flat else ""

    @property
    def label(self) -> str:
        """What the page prints beside the mark ("" when unflagged)."""
        return "did not move" if self.flagged else "evaluation did not move" if self.evaluation_flat else ""


@dataclass(frozen=True)
class Delta:
    """One evaluation metric of a line against Raw: Δraw and its MDE in the shown unit."""
    where: str  # the set's (or Macro's) label
    metric: str
    diff: float
    mde: float
    unit: str  # "pp" or "words"

    @property
    def moved(self) -> bool:
        return abs(self.diff) >= self.mde

    def describe(self) -> str:
        """'format rate Δ +1.00 pp (MDE 8.09)', at the tables' precision (words: one decimal)."""
        digits = 1 if self.unit == "words" else 2
        return f"{self.metric} Δ {self.diff:+.{digits}f} {self.unit} (MDE {self.mde:.{digits}f})"


def _by_set(deltas: list[Delta]) -> str:
    """'on Demo, accuracy Δ ... (MDE ...), format rate Δ ...; on Macro, accuracy Δ ...'."""
    groups: dict[str, list[str]] = {}
    for delta in deltas:
        groups.setdefault(delta.where, []).append(delta.describe())
    return "; ".join(f"on {where}, {', '.join(items)}" for where, items in groups.items())


def evaluation_deltas(line, raw_line, keys: list[str], labels: dict[str, str],
                      rows_by_id: dict[str, dict]) -> list[Delta]:
    """Every metric of the accuracy table (its cells' Δraw and MDE, the sets' `keys` then Macro)
    and of the behaviour table (behaviour.raw_differences, per set) with an MDE."""
    out = []
    for key in [*keys, "macro"] if len(keys) > 1 else keys:  # Macro of one set is that set
        cell = line.cells.get(key)
        if cell is not None and cell.vs_raw is not None and cell.vs_raw_mde is not None:
            out.append(Delta(labels.get(key, key), "accuracy", cell.vs_raw[0], cell.vs_raw_mde, "pp"))
        raw_cell = raw_line.cells.get(key)
        if key == "macro" or cell is None or raw_cell is None:
            continue
        mine = [rows_by_id[r] for r in cell.row_ids if r in rows_by_id]
        raw = [rows_by_id[r] for r in raw_cell.row_ids if r in rows_by_id]
        if mine and raw:
            for metric, diff, mde in behaviourlib.raw_differences(mine, raw):
                if mde is not None:
                    unit = "words" if metric in ("words", "length") else "pp"
                    out.append(Delta(labels.get(key, key), behaviourlib.NAMES[metric], diff, mde, unit))
    return out


def _equal_to_raw(line, raw_line, keys: list[str], rows_by_id: dict[str, dict]) -> tuple[int, int, list[str]]:
    """(sets compared, sets equal, questions compared per set as text) of line vs Raw."""
    compared, equal, sizes = 0, 0, []
    for key in keys:
        mine = [rows_by_id[r] for r in line.cells.get(key).row_ids if r in rows_by_id] if line.cells.get(key) else []
        raw = [rows_by_id[r] for r in raw_line.cells.get(key).row_ids if r in rows_by_id] \
            if raw_line.cells.get(key) else []
        if not mine or not raw:
            continue
        vectors = [outcomelib.of_row(r) for r in mine + raw[:1]]
        if any(v is None for v in vectors) or len({v[0] for v in vectors}) != 1:  # type: ignore[index]
            continue
        compared += 1
        same = all(np.array_equal(v[1], vectors[-1][1]) for v in vectors[:-1])  # type: ignore[index]
        equal += same
        sizes.append(f"{len(vectors[-1][1])} on {key}")  # type: ignore[index]
    return compared, equal, sizes


def _evaluation(deltas: list[Delta]) -> tuple[bool, str]:
    """(every compared metric within its MDE, the reason's evaluation clause)."""
    if not deltas:
        return False, "evaluation not assessed: no metric with an MDE against Raw"
    moved = [d for d in deltas if d.moved]
    if moved:
        return False, f"evaluation moved: |Δraw| >= MDE {_by_set(moved)}"
    return True, f"no evaluation metric differs from Raw by at least its MDE ({_by_set(deltas)})"


def assess(line, raw_line, keys: list[str], rows_by_id: dict[str, dict], raw_method: str,
           labels: dict[str, str] | None = None) -> Movement | None:
    """The line's movement verdict (None for Raw and untrained lines); `labels` names the
    columns in the reason (default: their keys)."""
    if line.method == raw_method or raw_line is None:
        return None
    runs: dict[str, dict] = {}
    for key in keys:
        for rid in (line.cells.get(key).row_ids if line.cells.get(key) else []):
            row = rows_by_id.get(rid)
            if row is not None and row.get("steps") is not None:
                runs.setdefault(row["run"]["run_id"], row)
    if not runs:
        return None
    trends = [run_trend(row.get("training")) for row in runs.values()]
    compared, equal, sizes = _equal_to_raw(line, raw_line, keys, rows_by_id)
    flat, evaluation = _evaluation(evaluation_deltas(line, raw_line, keys, labels or {}, rows_by_id))
    if any(t is None for t in trends):
        kept = all(row.get("training") for row in runs.values())
        curve = ("not assessed: no step logged a reward (train/log.jsonl `reward` absent or null, "
                 "e.g. every completion without signal)" if kept else
                 "not assessed: the row keeps no training curve (recorded before rows kept them; "
                 "`harness leaderboard add RUN_DIR --replace` adds it)")
        if flat:
            return Movement(False, f"evaluation did not move: reward {curve}; but {evaluation}", True)
        return Movement(False, f"{curve}; {evaluation}")
    if not compared:
        return Movement(False, "not assessed: no set where this line and Raw store per-question outcomes of the "
                               "same questions")
    curve = "; ".join(t.describe() for t in trends if t is not None)
    if all(t.flat for t in trends if t is not None) and equal == compared:
        return Movement(True, f"did not move: reward {curve}; every evaluation verdict equals Raw's "
                              f"({', '.join(sizes)} questions)")
    verdicts = ("every evaluation verdict equals Raw's" if equal == compared
                else f"verdicts differ from Raw's on {compared - equal} of {compared} set(s)")
    if flat:
        return Movement(False, f"evaluation did not move: reward {curve}; {verdicts}, but {evaluation}", True)
    return Movement(False, f"moved: reward {curve}; {verdicts}; {evaluation}")


def mark_lines(table, rows_by_id: dict[str, dict], raw_method: str) -> list[str]:
    """Set `Line.movement` on the accuracy table's trained lines; the notes of the flagged ones,
    each mark's legend first."""
    keys = [c.key for c in table.columns if c.key != "macro"]  # the sets (evaluation_deltas adds Macro)
    labels = {c.key: c.label.rstrip("†") for c in table.columns}
    notes: dict[str, list[str]] = {NOT_MOVED_MARK: [], EVAL_NOT_MOVED_MARK: []}
    for model, lines in table.groups:
        raw_line = next((line for line in lines if line.method == raw_method), None)
        for line in lines:
            found = assess(line, raw_line, keys, rows_by_id, raw_method, labels)
            line.movement = found
            if found is not None and found.mark:
                notes[found.mark].append(f"{found.mark} {model} / {line.method_label}: {found.text}.")
    return (([legend()] + notes[NOT_MOVED_MARK] if notes[NOT_MOVED_MARK] else [])
            + ([evaluation_legend()] + notes[EVAL_NOT_MOVED_MARK] if notes[EVAL_NOT_MOVED_MARK] else []))


def legend() -> str:
    return (f"{NOT_MOVED_MARK} = did not move (rule v{MOVEMENT_VERSION}): the run's reward curve is flat within noise "
            f"(no slope at two-sided permutation p < {TREND_ALPHA}; fewer than {MIN_STEPS} steps count as flat) and "
            "every evaluation verdict equals Raw's on every question; the line shows no effect of training "
            "(leaderboard/tables/movement.py).")


def evaluation_legend() -> str:
    return (f"{EVAL_NOT_MOVED_MARK} = evaluation did not move (rule v{MOVEMENT_VERSION}): a trained line not flagged "
            f"{NOT_MOVED_MARK} whose every evaluation metric with an MDE (accuracy per set and Macro; format rate, "
            "abstention, answer and completion words, answer accuracy per set) differs from Raw's by less than its "
            "MDE (|Δraw| < MDE: every difference to Raw marked ◇), whatever its reward curve did; nothing "
            "measurable changed on the held-out questions (leaderboard/tables/movement.py).")

def describe() -> dict[str, Any]:
    return {"version": MOVEMENT_VERSION, "alpha": TREND_ALPHA, "exact_max_steps": EXACT_MAX_STEPS,
            "permutations": TREND_PERMUTATIONS, "seed": TREND_SEED, "min_steps": MIN_STEPS,
            "test": "two-sided permutation test of the OLS slope of the per-step mean reward",
            "equal": "per-question correctness identical to Raw's on every paired set",
            "evaluation": "a line not flagged did-not-move is flagged evaluation-did-not-move when every metric of the "
                          "accuracy and behaviour tables with an MDE against Raw has |delta| < MDE (at least one)"}


__all__ = ["Delta", "EVAL_NOT_MOVED_MARK", "Movement", "NOT_MOVED_MARK", "Trend", "assess", "evaluation_deltas", "mark_lines", "run_trend", "trend"]
