"""Tables in the CorVer paper's layouts, as data (build.py builds them all; render/ draws them).

- accuracy (Table 1): per model, one line per method; the closed-book sets and TruthfulQA
  in percent, then Macro: the mean of the `macro_sets` present (the paper's five; all sets
  when none of them is), only for a line that has every one of them. Within each model
  and column the best value is bold and the second underlined (ranked on the printed
  two-decimal values, so ties share a mark; bold needs >= 2 lines and >= 2 distinct values,
  underline >= 3 lines). Neutral by default: only when a focus method is asked for
  (`publish --focus M`, layout `focus_method`) is it labelled "(ours)", placed last, and are
  its cells given its difference to the best competitor (any other line of that model, Raw
  included), computed on unrounded values.
- time (Table 18): per method, for each timed model Macro and training time (h:mm, nearest
  minute), the mean over those models (each weighted equally; only when the method has them
  all) and the ratio of its mean time to the reference method's. Steps: the runs' training
  steps (each timed model's, in column order, when they differ).
- multihop (Table 4): per model, one line per method; EM and F1 per multi-hop set; bold best.

A (model, method) line uses one run: the complete run (all the table's sets) with the
highest macro, as the paper keeps "the complete row with higher macro accuracy". Multi-hop
cells pick the best run per set, because the paper trains per dataset there.

A line whose rows used a stand-in reward component gets `stand_ins` (labels) and its table a
legend note (components.py); every renderer marks such a line.
"""
from __future__ import annotations

from typing import Any

from .. import diagnostics as diaglib
from ..store import rows as rowlib
from ..store.versions import model_key
from . import uncertainty
from .model import (Cell, Column, Layout, Line, Table, accuracy_tasks, differences, hmm, mark, model_labels,
                    multihop_tasks, pct, subset_notes)


def _runs(rows: list[dict], tasks: tuple[str, ...]) -> dict[tuple[str, str], dict[str, dict[str, dict]]]:
    """{(model key, method): {run_id: {set: row}}} for rows of the given tasks."""
    out: dict[tuple[str, str], dict[str, dict[str, dict]]] = {}
    for row in rows:
        if row["set"]["task"] in tasks:
            key = (model_key(row["model"]), row["method"]["name"])
            out.setdefault(key, {}).setdefault(row["run"]["run_id"], {})[row["set"]["name"]] = row
    return out


def _mean(values: list[float | None]) -> float | None:
    return sum(values) / len(values) if values and all(v is not None for v in values) else None  # type: ignore


def _model_groups(by_model: dict[str, list[Line]], labels: dict[str, str], layout: Layout
                  ) -> list[tuple[str, list[Line]]]:
    """(model label, its lines in the layout's method order), models sorted by label."""
    groups = []
    for mkey in sorted(by_model, key=lambda k: labels[k]):
        order = layout.sort_methods(line.method for line in by_model[mkey])
        groups.append((labels[mkey], sorted(by_model[mkey], key=lambda line: order.index(line.method))))
    return groups


def accuracy_table(rows: list[dict], layout: Layout) -> Table:
    boot = uncertainty.settings_of(layout.settings)
    tasks = accuracy_tasks()
    sets = layout.sort_sets(r["set"]["name"] for r in rows if r["set"]["task"] in tasks)
    partial = subset_notes(rows, sets, layout)
    columns = [Column(s, layout.set_label(s) + ("†" if s in partial else "")) for s in sets]
    columns.append(Column("macro", "Macro"))
    # Macro is the paper's five-set mean; other sets (e.g. the demo set) are shown beside it.
    macro_sets = [s for s in sets if s in layout.macro_sets] or sets
    labels = model_labels(rows)
    notes: list[str] = list(partial.values())
    by_model: dict[str, list[Line]] = {}
    for (mkey, method), runs in sorted(_runs(rows, tasks).items()):
        def score(item: tuple[str, dict[str, dict]]) -> tuple[int, float]:
            values = [rowlib.primary(r) for r in item[1].values()]
            return len(values), sum(v for v in values if v is not None) / max(len(values), 1)

        chosen_ids = uncertainty.choose(runs, score)  # one configuration, its seeds; best seed first
        run_id, seeds = chosen_ids[0], [runs[r] for r in chosen_ids]
        if len(runs) > 1:
            notes.append(f"{labels[mkey]} / {layout.method_label(method)}: {len(runs)} runs; kept {run_id} "
                         "(complete, highest macro)" + (f" and its {len(seeds) - 1} other seed(s)" if len(seeds) > 1
                                                        else ""))
        label = layout.method_label(method) + (f" ({len(seeds)} seeds)" if len(seeds) > 1 else "")
        line = Line(labels[mkey], method, label, run_ids=list(chosen_ids), seeds=len(seeds))
        for name in sets:
            members = [run[name] for run in seeds if name in run]
            if not members:
                line.cells[name] = Cell()
                continue
            info = uncertainty.seed_cell(members)
            flagged = [f for r in members for f in diaglib.flags(r.get("diagnostics"), rowlib.primary(r))]
            line.cells[name] = Cell(info["value"], pct(info["value"]), row_ids=[r["row_id"] for r in members],
                                    n=info["n"], se=info["se"], std=info["std"], seeds=info["seeds"],
                                    flags=flagged, strict=diaglib.strict_of(members),
                                    strict_rule=diaglib.strict_rule_of(members),
                                    brier=diaglib.calibration_of(members, "brier"),
                                    ece=diaglib.calibration_of(members, "ece"))
            vector = uncertainty.seed_vector(members)
            if vector is not None:
                line.vectors[name] = vector
        macro = _mean([line.cells[s].value for s in macro_sets])
        line.cells["macro"] = Cell(macro, pct(macro), row_ids=[r for s in sets for r in line.cells[s].row_ids],
                                   seeds=len(seeds))
        by_model.setdefault(mkey, []).append(line)
    groups = _model_groups(by_model, labels, layout)
    for _, lines in groups:
        for column in columns:
            mark(lines, column.key)
        differences(lines, [c.key for c in columns], layout.focus)
        uncertainty.attach(lines, [c.key for c in columns], macro_sets, layout.focus, layout.raw, boot)
    cells = [cell for _, lines in groups for line in lines for cell in line.cells.values()]
    with_ci = any(c.ci or (c.vs_raw and c.vs_raw[1] is not None) for c in cells)
    without = any((c.diff is not None and c.ci is None) or (c.vs_raw and c.vs_raw[1] is None) for c in cells)
    notes += uncertainty.legend(boot, with_ci, without)
    notes += diaglib.flag_notes([line for _, lines in groups for line in lines], layout.set_label)
    if sets:
        focus = layout.focus is not None and any(line.method == layout.focus for _, lines in groups for line in lines)
        notes.insert(0, f"Accuracy (%). Macro = mean of {', '.join(layout.set_label(s) for s in macro_sets)}; "
                        "bold = best, underline = second best within each model"
                        + (f"; (±x) = difference of {layout.method_label(layout.focus)} to the best other method."
                           if focus else "."))
    return Table("accuracy", "Closed-book QA accuracy (%)", columns, groups, notes)


def multihop_table(rows: list[dict], layout: Layout) -> Table:
    tasks = multihop_tasks()
    sets = layout.sort_sets(r["set"]["name"] for r in rows if r["set"]["task"] in tasks)
    partial = subset_notes(rows, sets, layout)
    columns = [Column(f"{s}:{m}", m.upper(), group=layout.set_label(s) + ("†" if s in partial else ""))
               for s in sets for m in ("em", "f1")]
    labels = model_labels(rows)
    by_model: dict[str, list[Line]] = {}
    for (mkey, method), runs in sorted(_runs(rows, tasks).items()):
        line = Line(labels[mkey], method, layout.method_label(method))
        for name in sets:
            candidates = [r[name] for r in runs.values() if name in r]
            best = max(candidates, key=lambda r: rowlib.primary(r, "em") or 0.0) if candidates else None
            if best is not None and best["run"]["run_id"] not in line.run_ids:
                line.run_ids.append(best["run"]["run_id"])
            for metric in ("em", "f1"):
                value = None if best is None else rowlib.primary(best, metric)
                value = None if value is None else 100.0 * value
                line.cells[f"{name}:{metric}"] = Cell(value, pct(value), row_ids=[best["row_id"]] if best else [])
        by_model.setdefault(mkey, []).append(line)
    groups = _model_groups(by_model, labels, layout)
    for _, lines in groups:
        for column in columns:
            mark(lines, column.key, second=False)
    notes = ["Answer EM and F1 (%); bold = best within each model. The paper trains on each multi-hop set "
             "separately; check each row's pool in its provenance."] if sets else []
    notes += list(partial.values())
    return Table("multihop", "Closed-book multi-hop QA (EM / F1, %)", columns, groups, notes)


def time_table(accuracy: Table, rows: list[dict], layout: Layout) -> Table | None:
    """Table 18 from the accuracy table's lines and the timer of the run each line uses
    (None when no line's run was timed)."""
    timers = {r["run"]["run_id"]: r for r in rows if r.get("timer")}
    models = [label for label, lines in accuracy.groups if any(line.run_ids[0] in timers for line in lines)]
    if not models:
        return None
    columns = [Column("steps", "Steps")]
    for model in models:
        columns += [Column(f"{model}:macro", "Macro", group=model),
                    Column(f"{model}:time", "Time", group=model, higher_is_better=False)]
    ref_label = layout.method_label(layout.reference or "").replace(" (ours)", "")
    columns += [Column("mean:macro", "Macro", group="Mean"),
                Column("mean:time", "Time", group="Mean", higher_is_better=False),
                Column("ratio", f"/ {ref_label}", group="Time ratio", higher_is_better=False)]
    per_method: dict[str, Line] = {}
    steps: dict[str, dict[str, tuple[Any, str]]] = {}  # method -> model -> (steps, row id)
    devices: set[str] = set()
    for model, lines in accuracy.groups:
        if model not in models:
            continue
        for acc in lines:
            line = per_method.setdefault(acc.method, Line("", acc.method, acc.method_label.replace(" (ours)", "")))
            row = timers.get(acc.run_ids[0])
            seconds = float(row["timer"]["total_s"]) if row else None
            if row:
                dev = row["timer"]["device"]
                devices.add(f"{dev.get('name')} ×{dev.get('count')}")
                steps.setdefault(acc.method, {})[model] = (row.get("steps"), row["row_id"])
            macro = acc.cells["macro"]
            line.cells[f"{model}:macro"] = Cell(macro.value, macro.text, row_ids=list(macro.row_ids))
            line.cells[f"{model}:time"] = Cell(seconds, hmm(seconds), row_ids=[row["row_id"]] if row else [])
            line.run_ids += [r for r in acc.run_ids if r not in line.run_ids]
    for line in per_method.values():
        macro = _mean([line.cells.get(f"{m}:macro", Cell()).value for m in models])
        seconds = _mean([line.cells.get(f"{m}:time", Cell()).value for m in models])
        line.cells["mean:macro"] = Cell(macro, pct(macro))
        line.cells["mean:time"] = Cell(seconds, hmm(seconds))
        line.cells["steps"] = _steps_cell([steps.get(line.method, {}).get(m) for m in models])
    ref = per_method.get(layout.reference or "")
    ref_time = ref.cells["mean:time"].value if ref else None
    for line in per_method.values():
        seconds = line.cells["mean:time"].value
        ratio = seconds / ref_time if seconds is not None and ref_time else None
        line.cells["ratio"] = Cell(ratio, "—" if ratio is None else f"{ratio:.2f}×")
    order = layout.sort_methods(per_method)
    order.sort(key=lambda m: (m != layout.raw, m != layout.reference))
    notes = ["Macro: accuracy (%) averaged over the benchmark sets; Time: complete training time (h:mm, nearest "
             "minute) from the harness timer, excluding queueing and evaluation; means weight models equally."]
    if ref_time is None:
        notes.append(f"No timed run of the reference method {layout.reference!r}: no ratios.")
    if devices:
        notes.append(("Timed on " if len(devices) == 1 else "WARNING, timed on different devices: ")
                     + ", ".join(sorted(devices)) + ".")
    return Table("time", "Accuracy and training time", columns, [(None, [per_method[m] for m in order])],
                 notes, first_header="")


def _steps_cell(per_model: list[tuple[Any, str] | None]) -> Cell:
    """One Steps cell for a method's timed models: the value when they agree, else each
    model's in column order ("100 / 200"), sorted by the largest."""
    known = [item for item in per_model if item is not None]
    if not known:
        return Cell()
    values = [item[0] for item in known]
    numbers = [v for v in values if isinstance(v, (int, float))]
    if len(set(values)) == 1:
        text = str(values[0]) if values[0] is not None else "—"
    else:
        text = " / ".join("—" if item is None or item[0] is None else str(item[0]) for item in per_model)
    return Cell(max(numbers) if numbers else None, text, row_ids=[rid for _, rid in known])
