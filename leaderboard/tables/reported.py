"""Measured lines beside the papers' reported numbers ("Reported numbers").

For every model of the accuracy table that a reported file (reported.py) covers, this table
prints each method's measured line (the accuracy table's cells and marks: the bold/underline
ranking is among measured lines only) followed by its reported line, `<Method> (reported,
<paper>)`, whose cells are never marked. Where a measured cell of the same method, model
and set exists, the reported cell carries the gap `(measured - reported)` in pp, and
uncertainty.NOISE_MARK when the reported value lies inside the measured cell's 95% interval:

- a set: the Wilson score interval of the measured accuracy from its n questions (for a
  line of several seeds, their mean with one seed's n);
- Macro: the normal interval of the mean of the macro sets, from their binomial standard
  errors (sets are independent samples).

The cell's `ci` is that interval shifted by the reported value (the gap's interval when only
the measured side is uncertain), so every renderer's "interval includes 0" mark applies as is.
`comparisons` are the same facts per entry for OUT/reported.json.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Any

from ..reported import MACRO, Entry, ReportedFile
from ..store.versions import model_key
from .model import Cell, Layout, Line, Table, model_labels, pct
from .uncertainty import NOISE_MARK

INTERVAL_RULE = "wilson-95/1"  # bump when the interval rule changes


@dataclass
class Comparison:
    paper: str
    entry: Entry
    measured: float | None = None  # percent
    n: int | None = None
    low: float | None = None
    high: float | None = None

    @property
    def gap(self) -> float | None:
        if self.measured is None:
            return None
        gap = self.measured - self.entry.value
        return 0.0 if abs(gap) < 1e-9 else gap  # a fraction stored from the paper's percent: never "-0.00"

    @property
    def inside(self) -> bool | None:
        return None if self.low is None else self.low <= self.entry.value <= self.high  # type: ignore[operator]

    def to_dict(self) -> dict[str, Any]:
        e = self.entry
        return {"paper": self.paper, "method": e.method, "model": e.model, "set": e.set, "metric": e.metric,
                "reported": e.value, "references": [r.__dict__ for r in e.refs], "measured": self.measured,
                "n": self.n, "interval": None if self.low is None else [self.low, self.high], "gap": self.gap,
                "inside": self.inside}


def _z(level: float) -> float:
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def wilson(value_pct: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval (percent) of an accuracy measured on n questions."""
    p, z = value_pct / 100.0, _z(level)
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / denom
    return 100.0 * max(0.0, centre - half), 100.0 * min(1.0, centre + half)


def macro_interval(cells: list[Cell], level: float = 0.95) -> tuple[float, float] | None:
    """Normal interval (percent) of the mean of independent set accuracies, from their n."""
    if not cells or any(c.value is None or not c.n for c in cells):
        return None
    mean = sum(c.value for c in cells) / len(cells)  # type: ignore[misc]
    var = sum((c.value / 100) * (1 - c.value / 100) / c.n for c in cells) / len(cells) ** 2  # type: ignore
    half = 100.0 * _z(level) * var ** 0.5
    return mean - half, mean + half


def _measured_interval(line: Line, key: str, macro_sets: list[str]) -> tuple[float, float] | None:
    cell = line.cells.get(key)
    if cell is None or cell.value is None:
        return None
    if key == MACRO:
        return macro_interval([line.cells[s] for s in macro_sets if s in line.cells])
    return wilson(cell.value, cell.n) if cell.n else None


def _model_names(rows: list[dict]) -> dict[str, str]:
    """{display label: model name} of the accuracy table's groups."""
    labels = model_labels(rows)
    return {labels[model_key(r["model"])]: r["model"]["name"] for r in rows}


def build(accuracy: Table | None, rows: list[dict], layout: Layout, files: list[ReportedFile]
          ) -> tuple[Table | None, list[Comparison]]:
    """The measured-vs-reported table (None when no reported model was measured) and the comparisons."""
    if accuracy is None or not files or not accuracy.lines:
        return None, []
    names = _model_names(rows)
    macro_sets = [s for s in (c.key for c in accuracy.columns) if s in layout.macro_sets] or \
        [c.key for c in accuracy.columns if c.key != MACRO]
    keys = [c.key for c in accuracy.columns]
    groups, comparisons, shown_models = [], [], set()
    for label, measured_lines in accuracy.groups:
        model = names.get(label or "")
        by_file = [(f, f.for_model(model)) for f in files] if model else []
        if not any(found for _, found in by_file):
            continue
        shown_models.add(model)
        measured = {line.method: line for line in measured_lines}
        methods = layout.sort_methods(set(measured) | {m for _, found in by_file for m in found})
        out: list[Line] = []
        for method in methods:
            mine = measured.get(method)
            if mine is not None:  # the accuracy table's line: its marks rank measured lines only
                cells = {k: replace(c, diff=None, ci=None, vs_raw=None, mde=None, vs_raw_mde=None)
                         for k, c in mine.cells.items()}
                out.append(Line(mine.model, method, f"{mine.method_label} (measured)", cells, list(mine.run_ids),
                                list(mine.stand_ins), mine.seeds))
            for file, found in by_file:
                if method not in found:
                    continue
                line = Line(label or "", f"{method} (reported, {file.paper})",
                            f"{layout.method_label(method).replace(' (ours)', '')} (reported, {file.paper})")
                for key in keys:
                    entry = found[method].get(key)
                    if entry is None:
                        continue
                    item = Comparison(file.paper, entry)
                    cell = Cell(entry.value, pct(entry.value))
                    got = None if mine is None else mine.cells.get(key)
                    if got is not None and got.value is not None:
                        item.measured, item.n = got.value, got.n
                        interval = _measured_interval(mine, key, macro_sets)  # type: ignore[arg-type]
                        cell.diff = item.gap
                        if interval is not None:
                            item.low, item.high = interval
                            cell.ci = (interval[0] - entry.value, interval[1] - entry.value)
                    line.cells[key] = cell
                    comparisons.append(item)
                out.append(line)
        groups.append((label, out))
    if not groups:
        return None, []
    notes = [f"Reported lines are the papers' own numbers, never ranked: bold/underline mark measured lines only. "
             f"(±x) on a reported cell = measured − reported (pp) where the same method, model and set was "
             f"measured; "
             f"{NOISE_MARK} = the reported value lies inside the measured 95% interval (Wilson interval from the "
             f"set's n questions; Macro: normal interval from the sets' binomial standard errors)."]
    for file in files:
        refs = sorted({r.text() for e in file.entries for r in e.refs}, key=lambda t: (len(t), t))
        notes.append(f"{file.paper} (reported file version {file.version}, {file.path.name}"
                     + (f"; {file.citation}" if file.citation else "") + "): " + ", ".join(refs) + ".")
        unshown = sorted({e.model for e in file.entries} - shown_models)
        if unshown:
            notes.append(f"{file.paper}: reported models without a measured row (not shown): {', '.join(unshown)}.")
    columns = [replace(c) for c in accuracy.columns]
    return Table("reported", "Measured vs reported accuracy (%)", columns, groups, notes), comparisons
