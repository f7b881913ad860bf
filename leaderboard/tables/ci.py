"""Views of the accuracy table that say what its numbers can decide.

Table 1 keeps the paper's layout (values, marks, the focus difference). Two views follow it,
with the same lines and columns:

- **uncertainty** (`ci_table`): a cell is `45.20 ±0.74` (standard error, pp) for one seed,
  `45.20 ±0.50` (standard deviation across seeds, pp) for several; the line says `[1 seed]` or
  `[3 seeds]`, the column header the set's question count n; `strict 44.10` beside it;
  `Δraw +1.20 [+0.30, +2.10] MDE 1.85`: the line's difference to Raw with its paired bootstrap
  interval and its minimum detectable difference; `Δbest ...` on the focus line: its
  difference to the best competitor, likewise.
- **difference to Raw** (`raw_diff_table`, layout `vs_raw_table`): every line but Raw, each
  cell its difference to Raw of the same model in pp (the sortable value) with interval and
  MDE, so a grid of methods (the demo grid) reads as gains over the unmodified model.

uncertainty.NOISE_MARK follows a difference whose interval includes 0, UNDECIDED_MARK one
smaller than its MDE ("cannot decide at this n").
"""
from __future__ import annotations

from dataclasses import replace

from ..diagnostics import STRICT_RULE_VERSION
from . import uncertainty
from .model import Cell, Column, Layout, Line, Table


def _text(cell: Cell, raw: bool) -> str:
    if cell.value is None:
        return "—"
    spread = cell.se if cell.seeds == 1 else cell.std
    parts = [f"{cell.value:.2f}" + ("" if spread is None else f" ±{spread:.2f}")]
    if cell.strict is not None:
        parts.append(strict_text(cell))
    if cell.brier is not None and cell.ece is not None:
        parts.append(f"Brier {cell.brier:.3f} · ECE {cell.ece:.3f}")
    if cell.vs_raw is not None and not raw:
        parts.append("Δraw " + uncertainty.diff_text(*cell.vs_raw, with_interval=True, mde_pp=cell.vs_raw_mde))
    if cell.diff is not None:
        low, high = cell.ci if cell.ci else (None, None)
        parts.append("Δbest " + uncertainty.diff_text(cell.diff, low, high, with_interval=True, mde_pp=cell.mde))
    return " · ".join(parts)


def strict_text(cell: Cell) -> str:
    """'strict 44.10 (gap 1.10)': strict accuracy and primary - strict (pp); the rule version
    when it is not the current one ('strict v1 ...', rows recorded before v2)."""
    rule = "" if cell.strict_rule in (None, STRICT_RULE_VERSION) else f" v{cell.strict_rule}"
    gap = "" if cell.value is None or cell.strict is None else f" (gap {cell.value - cell.strict:.2f})"
    return f"strict{rule} {cell.strict:.2f}{gap}"


def _columns(accuracy: Table) -> list[Column]:
    """The accuracy table's columns, each header with its set's n when the lines agree on it."""
    columns = []
    for column in accuracy.columns:
        ns = {line.cells[column.key].n for line in accuracy.lines
              if column.key in line.cells and line.cells[column.key].n is not None}
        label = column.label + (f" (n={ns.pop()})" if len(ns) == 1 else "")
        columns.append(Column(column.key, label, column.group, column.numeric, column.higher_is_better))
    return columns


def _legend(accuracy: Table) -> list[str]:
    return [n for n in accuracy.notes if n.startswith((uncertainty.NOISE_MARK, uncertainty.MDE_LEGEND_START,
                                                       "Differences"))]


def ci_table(accuracy: Table, layout: Layout) -> Table:
    """The uncertainty view of the accuracy table (same lines; no marks)."""
    groups = []
    for group, lines in accuracy.groups:
        out = []
        for line in lines:
            seeds = f" [{line.seeds} seed{'s' if line.seeds > 1 else ''}]"
            label = line.method_label.replace(f" ({line.seeds} seeds)", "") + seeds
            # The text carries the differences: no second "(+x)" from the renderers.
            cells = {key: replace(cell, text=_text(cell, line.method == layout.raw), mark="", diff=None)
                     for key, cell in line.cells.items()}
            out.append(Line(line.model, line.method, label, cells, list(line.run_ids), list(line.stand_ins),
                            line.seeds))
        groups.append((group, out))
    boot = uncertainty.settings_of(layout.settings)
    notes = ["Accuracy (%) ± standard error (one seed) or ± standard deviation across seeds (pp; [k seeds] on the "
             "line); n = questions per set. Δraw: difference to Raw, Δbest: the focus method's difference to the "
             f"best other line, each with its paired bootstrap {boot.level:.0%} interval [low, high] and its MDE in "
             f"pp. strict: strict accuracy v{STRICT_RULE_VERSION} (no credit for several answer blocks, a negated or "
             "retracted gold, or several candidates; harness/core/answers/strict.py), gap = accuracy - strict, the gaming signal "
             "(strict v1: rows recorded before v2, the hedge rule)."]
    if any(cell.brier is not None for line in accuracy.lines for cell in line.cells.values()):
        notes.append("Brier · ECE: calibration of the confidences the answers state (<confidence> blocks), as "
                     "fractions, lower is better: the Brier score and the expected calibration error over 10 "
                     "equal-width bins, of the answers that state one (evals/calibration.py; each set's "
                     "metrics.json `calibration` holds the count and bootstrap intervals); only on such lines.")
    notes += _legend(accuracy)
    return Table("accuracy_ci", "Closed-book QA accuracy with uncertainty (%)", _columns(accuracy), groups, notes,
                 wrap=True)


def raw_diff_table(accuracy: Table, layout: Layout) -> Table | None:
    """Every line's difference to Raw (pp) with interval and MDE; None when no line has one."""
    groups = []
    for group, lines in accuracy.groups:
        out = []
        for line in lines:
            if line.method == layout.raw:
                continue
            cells = {}
            for key, cell in line.cells.items():
                if cell.vs_raw is None:
                    cells[key] = Cell(row_ids=list(cell.row_ids))
                    continue
                diff, low, high = cell.vs_raw
                cells[key] = Cell(diff, uncertainty.diff_text(diff, low, high, True, cell.vs_raw_mde),
                                  row_ids=list(cell.row_ids), n=cell.n, seeds=cell.seeds, vs_raw=cell.vs_raw,
                                  vs_raw_mde=cell.vs_raw_mde)
            out.append(Line(line.model, line.method, line.method_label, cells, list(line.run_ids),
                            list(line.stand_ins), line.seeds))
        if out:
            groups.append((group, out))
    if not any(cell.value is not None for _, lines in groups for line in lines for cell in line.cells.values()):
        return None
    boot = uncertainty.settings_of(layout.settings)
    raw = layout.method_label(layout.raw)
    notes = [f"Difference to {raw} of the same model (pp; {raw}'s own accuracy is in the accuracy table), with its "
             f"paired bootstrap {boot.level:.0%} interval [low, high] and its minimum detectable difference (MDE) at "
             "this n; Macro over the macro sets."]
    notes += _legend(accuracy)
    return Table("vs_raw", f"Difference to {raw} (pp), with intervals and MDE", _columns(accuracy), groups, notes,
                 wrap=True)


def views(accuracy: Table | None, layout: Layout) -> list[Table]:
    """The views publish prints after the accuracy table: uncertainty, then difference to Raw."""
    if accuracy is None:
        return []
    out = [ci_table(accuracy, layout)]
    if layout.settings.get("vs_raw_table"):
        diff = raw_diff_table(accuracy, layout)
        out += [diff] if diff is not None else []
    return out
