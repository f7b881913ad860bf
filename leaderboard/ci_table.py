"""The accuracy table again, with every number's uncertainty (issue 15).

Table 1 keeps the paper's layout (values, marks, the focus difference); this table, published
right after it, has the same lines and columns with what a reader needs to judge them:

- a cell is `45.20 ±0.74` (standard error, pp) for one seed, `45.20 ±0.50` (standard
  deviation across seeds, pp) for several; the line says `[1 seed]` or `[3 seeds]`, the
  column header the set's question count n;
- `Δraw +1.20 [+0.30, +2.10]`: the line's difference to Raw with its paired bootstrap
  interval; `Δbest ...` on the focus line: its difference to the best competitor;
- uncertainty.NOISE_MARK after a difference whose interval includes 0.
"""
from __future__ import annotations

from dataclasses import replace

from . import uncertainty
from .tables import Cell, Column, Layout, Line, Table


def _text(cell: Cell, raw: bool) -> str:
    if cell.value is None:
        return "—"
    spread = cell.se if cell.seeds == 1 else cell.std
    parts = [f"{cell.value:.2f}" + ("" if spread is None else f" ±{spread:.2f}")]
    if cell.strict is not None:
        parts.append(f"strict {cell.strict:.2f}")
    if cell.vs_raw is not None and not raw:
        parts.append("Δraw " + uncertainty.diff_text(*cell.vs_raw, with_interval=True))
    if cell.diff is not None:
        low, high = cell.ci if cell.ci else (None, None)
        parts.append("Δbest " + uncertainty.diff_text(cell.diff, low, high, with_interval=True))
    return " · ".join(parts)


def ci_table(accuracy: Table, layout: Layout) -> Table:
    """The uncertainty view of the accuracy table (same lines; no marks)."""
    columns = []
    for column in accuracy.columns:
        ns = {line.cells[column.key].n for line in accuracy.lines
              if column.key in line.cells and line.cells[column.key].n is not None}
        label = column.label + (f" (n={ns.pop()})" if len(ns) == 1 else "")
        columns.append(Column(column.key, label, column.group, column.numeric, column.higher_is_better))
    groups = []
    for group, lines in accuracy.groups:
        out = []
        for line in lines:
            seeds = f" [{line.seeds} seed{'s' if line.seeds > 1 else ''}]"
            label = line.method_label.replace(f" ({line.seeds} seeds)", "") + seeds
            cells = {key: replace(cell, text=_text(cell, line.method == layout.raw), mark="")
                     for key, cell in line.cells.items()}
            out.append(Line(line.model, line.method, label, cells, list(line.run_ids), list(line.stand_ins),
                            line.seeds))
        groups.append((group, out))
    boot = uncertainty.settings_of(layout.settings)
    notes = ["Accuracy (%) ± standard error (one seed) or ± standard deviation across seeds (pp; [k seeds] on the "
             "line); n = questions per set. Δraw: difference to Raw, Δbest: the focus method's difference to the "
             f"best other line, each with its paired bootstrap {boot.level:.0%} interval [low, high] in pp. strict: "
             "accuracy without credit for answers listing several candidates (leaderboard/diagnostics.py)."]
    notes += [n for n in accuracy.notes if n.startswith(uncertainty.NOISE_MARK) or n.startswith("Differences")]
    return Table("accuracy_ci", "Closed-book QA accuracy with uncertainty (%)", columns, groups, notes)
