"""Behaviour tables: how each method answers, beside how often it is right, against Raw.

A reward moves more than accuracy: the answer format, how often the model abstains, how long its
answers are, and how often an attempted answer is right. One table per evaluated set
(`behaviour_<set>`), with the accuracy table's lines (the same runs and seeds) and the columns

- Accuracy (%): the accuracy table's cell, with its difference to Raw;
- Format (%): share of answers with exactly one closed, non-empty answer block (`format_ok`);
- Abstention (%): share not attempted, an explicit refusal or an empty answer (`na`, na_rate);
- Answer words: mean whitespace words of the extracted answer (`answer_words`);
- Completion words: mean whitespace words of the whole completion, reasoning included
  (`completion_words`): the length a reward with a length term, or one that pays fewer
  statements, moves first;
- Answer acc. (%): correct / attempted (the precision of the answers given; SimpleQA's "correct
  given attempted"): a method that learns to abstain when unsure raises it without raising
  accuracy.

Each cell shows the line's value and, for every line but Raw, `Δraw` = its difference to Raw of
the same model with the paired bootstrap interval and the MDE at this n, from the rows'
per-question vectors (store/behaviour.py, outcomes.py; a multi-seed line uses the per-question
mean over its seeds). The means use stats.paired_interval / paired_mde; answer accuracy, a ratio,
stats.ratio_interval (the same bootstrap) and ratio_mde (delta method). A row without the
vectors (recorded before them) shows its metrics.json value without an interval. The movement
verdict (movement.py, "evaluation did not move") reads the same Δraw and MDE through
`raw_differences`, so the flag and this table never disagree.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..store import behaviour as behaviourlib
from ..store import outcomes as outcomelib
from . import uncertainty
from .model import Cell, Column, Layout, Line, Table
from .stats import BootstrapSettings, Interval, paired_interval, paired_mde, ratio_interval, ratio_mde

# (column key, label, metrics.json key, per-question field, scale to the shown unit)
COLUMNS = (("format", "Format (%)", "format_rate", "format_ok", 100.0),
           ("abstention", "Abstention (%)", "na_rate", "na", 100.0),
           ("words", "Answer words", "mean_answer_words", "answer_words", 1.0),
           ("length", "Completion words", "mean_completion_words", "completion_words", 1.0),
           ("answer_accuracy", "Answer acc. (%)", None, None, 100.0))
# What the movement verdict's reason calls each column (tables/movement.py).
NAMES = {"format": "format rate", "abstention": "abstention", "words": "answer words", "length": "completion words",
         "answer_accuracy": "answer accuracy"}
PRECISION = {"words": 1, "length": 1}


def _vectors(rows: list[dict]) -> tuple[str, dict[str, np.ndarray]] | None:
    """(ids hash, {field: per-question mean over the seed rows}) incl. `correct`, or None."""
    found = []
    for row in rows:
        beh, out = behaviourlib.of_row(row), outcomelib.of_row(row)
        if beh is None or out is None or beh[0] != out[0]:
            return None
        found.append((beh[0], {**beh[1], "correct": out[1]}))
    if not found or len({h for h, _ in found}) != 1:
        return None
    fields = set.intersection(*(set(v) for _, v in found))
    return found[0][0], {f: np.mean([v[f] for _, v in found], axis=0) for f in fields}


def _metric(rows: list[dict], key: str) -> float | None:
    values = [(r["metrics"].get(key) or {}).get("value") for r in rows]
    return None if not values or None in values else float(np.mean(values))


def _answer_accuracy(rows: list[dict]) -> float | None:
    values = []
    for row in rows:
        acc, na = _metric([row], "accuracy"), _metric([row], "na_rate")
        if acc is None or na is None or na >= 1.0:
            return None
        values.append(acc / (1.0 - na))
    return float(np.mean(values)) if values else None


def _value(key: str, metric: str | None, field: str | None, rows: list[dict],
           vectors: dict[str, np.ndarray] | None) -> float | None:
    """The line's value (fraction or words) from its vectors, else from metrics.json."""
    if key == "answer_accuracy":
        if vectors and "na" in vectors:
            attempted = 1.0 - vectors["na"]
            return float(vectors["correct"].sum() / attempted.sum()) if attempted.sum() else None
        return _answer_accuracy(rows)
    if vectors and field in vectors:
        return float(vectors[field].mean())
    return _metric(rows, metric) if metric else None


def _compare(key: str, field: str | None, mine: dict[str, np.ndarray], raw: dict[str, np.ndarray],
             settings: BootstrapSettings | None) -> tuple[Interval | None, float | None]:
    """(interval, MDE) of mine - raw in the column's own unit (fractions or words); no interval
    (no resampling) when `settings` is None."""
    if key == "answer_accuracy":
        if "na" not in mine or "na" not in raw:
            return None, None
        args = (mine["correct"], 1.0 - mine["na"], raw["correct"], 1.0 - raw["na"])
        return (ratio_interval(*args, settings) if settings else None), ratio_mde(*args)
    if field not in mine or field not in raw:
        return None, None
    return (paired_interval(mine[field], raw[field], settings) if settings else None), \
        paired_mde(mine[field], raw[field])


Found = tuple[str, dict[str, np.ndarray]] | None  # _vectors of a line's rows


def against_raw(rows: list[dict], found: Found, raw: tuple[list[dict], Found] | None,
                settings: BootstrapSettings | None) -> dict[str, tuple[float | None, tuple | None, float | None]]:
    """{column key: (value, (Δraw, low, high) or None, MDE or None)} of one line on one set, in
    the shown unit (% or words); `raw` (Raw's rows and vectors) None for Raw itself. The
    behaviour table passes its bootstrap settings; the movement verdict None (Δ and MDE only)."""
    vectors = found[1] if found else None
    raw_vectors = raw[1][1] if raw is not None and raw[1] else None
    out = {}
    for key, _, metric, field, scale in COLUMNS:
        value = _value(key, metric, field, rows, vectors)
        shown = None if value is None else value * scale
        vs_raw, mde = None, None
        if raw is not None and shown is not None:
            raw_value = _value(key, metric, field, raw[0], raw_vectors)
            paired = (vectors is not None and raw_vectors is not None and found is not None
                      and raw[1] is not None and found[0] == raw[1][0])
            interval, mde_raw = _compare(key, field, vectors, raw_vectors, settings) if paired else (None, None)
            if raw_value is not None:
                vs_raw = (shown - raw_value * scale, None if interval is None else interval.low * scale,
                          None if interval is None else interval.high * scale)
            mde = None if mde_raw is None else mde_raw * scale
        out[key] = (shown, vs_raw, mde)
    return out


def raw_differences(rows: list[dict], raw_rows: list[dict]) -> list[tuple[str, float, float | None]]:
    """(column key, Δraw, MDE or None) of each behaviour column with a difference, in the shown
    unit: what the behaviour table prints, without its interval."""
    found = against_raw(rows, _vectors(rows), (raw_rows, _vectors(raw_rows)), None)
    return [(key, vs_raw[0], mde) for key, (_, vs_raw, mde) in found.items() if vs_raw is not None]


def _text(value: float | None, digits: int, vs_raw: tuple | None, mde: float | None) -> str:
    """'12.00 · Δraw +3.00§◇ [-1.00, +7.00] MDE 4.85' (the column's precision)."""
    if value is None:
        return "—"
    shown = f"{value:.{digits}f}"
    return shown if vs_raw is None else f"{shown} · Δraw {_plain(*vs_raw, mde, digits)}"


def _plain(diff: float, low: float | None, high: float | None, mde: float | None, digits: int) -> str:
    """uncertainty.diff_text with the column's own precision (answer words: one decimal)."""
    text = f"{diff:+.{digits}f}{uncertainty.marks(diff, low, high, mde)}"
    if low is not None and high is not None:
        text += f" [{low:+.{digits}f}, {high:+.{digits}f}]"
    return text + (f" MDE {mde:.{digits}f}" if mde is not None else "")


def _set_table(accuracy: Table, name: str, label: str, rows_by_id: dict[str, dict], layout: Layout,
               settings: BootstrapSettings) -> Table | None:
    columns = [Column("accuracy", "Accuracy (%)")] + [
        Column(key, text, higher_is_better=key not in ("abstention", "words", "length")) for key, text, *_ in COLUMNS]
    groups: list[tuple[str | None, list[Line]]] = []
    seen_vectors = False
    for model, lines in accuracy.groups:
        members = {}
        for line in lines:
            cell = line.cells.get(name)
            rows = [rows_by_id[r] for r in (cell.row_ids if cell else []) if r in rows_by_id]
            if rows:
                members[line.method] = (line, rows, _vectors(rows))
        if not members:
            continue
        raw = members.get(layout.raw)
        out = []
        for method, (line, rows, found) in members.items():
            seen_vectors = seen_vectors or found is not None
            acc = line.cells[name]
            cells = {"accuracy": Cell(acc.value, _text(acc.value, 2, acc.vs_raw, acc.vs_raw_mde), row_ids=list(acc.row_ids),
                                      n=acc.n, vs_raw=acc.vs_raw, vs_raw_mde=acc.vs_raw_mde)}
            against = against_raw(rows, found, None if method == layout.raw or raw is None else raw[1:], settings)
            for key, (shown, vs_raw, mde) in against.items():
                cells[key] = Cell(shown, _text(shown, PRECISION.get(key, 2), vs_raw, mde), row_ids=list(acc.row_ids),
                                  vs_raw=vs_raw, vs_raw_mde=mde)
            out.append(Line(line.model, line.method, line.method_label, cells, list(line.run_ids),
                            list(line.stand_ins), line.seeds, movement=line.movement))
        groups.append((model, out))
    if not groups:
        return None
    n = {line.cells[name].n for line in accuracy.lines if name in line.cells and line.cells[name].n}
    notes = [f"Answer behaviour on {label} (accuracy, format, abstention and answer accuracy in %, answer and completion length in "
             "words). Format: one closed, non-empty answer block; abstention: refused or empty (na); answer acc.: "
             "correct / attempted. Δraw: difference to Raw of the same model with its paired bootstrap "
             f"{settings.level:.0%} interval and MDE (answer acc.: delta-method MDE; leaderboard/tables/behaviour.py)."]
    if not seen_vectors:
        notes.append("No row stores per-question behaviour (recorded before it, or samples.jsonl without format_ok, "
                     "na, answer_words): values from metrics.json, no intervals.")
    title = f"Answer behaviour on {label}" + (f" (n={n.pop()})" if len(n) == 1 else "")
    return Table(f"behaviour_{name}", title, columns, groups, notes, wrap=True)


def behaviour_tables(accuracy: Table | None, rows: list[dict], layout: Layout) -> list[Table]:
    """One behaviour table per accuracy set where some row stores per-question behaviour (a run
    recorded with this harness; rows of older ones show their metrics.json values beside them)."""
    if accuracy is None:
        return []
    settings = uncertainty.settings_of(layout.settings)
    by_id = {r["row_id"]: r for r in rows}
    has: Callable[[dict[str, Any]], bool] = lambda r: bool(r.get("behaviour"))
    tables = []
    for column in accuracy.columns:
        if column.key == "macro":
            continue
        ids = [rid for line in accuracy.lines for rid in line.cells.get(column.key, Cell()).row_ids]
        if not any(has(by_id[r]) for r in ids if r in by_id):
            continue
        table = _set_table(accuracy, column.key, column.label.rstrip("†"), by_id, layout, settings)
        if table is not None:
            tables.append(table)
    return tables
