"""Plots for the published leaderboard (matplotlib, Agg canvas, PNG).

Figures are built with `matplotlib.figure.Figure` and the Agg canvas directly rather than
pyplot, so publishing never touches the caller's backend or global figure state.
Each function returns the written path, or a note saying why the plot was skipped.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..tables import Layout, Table


def _text(value: Any) -> str:
    """Plot text shown literally: `$` would start matplotlib's mathtext."""
    return str(value).replace("$", r"\$")


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=120, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def accuracy_vs_time(time_table: Table | None, layout: Layout, path: Path) -> Path | str:
    """One point per (method, model): training hours against macro accuracy; Raw as a line."""
    if time_table is None:
        return "accuracy vs training time: no timed runs in this version"
    models = list(dict.fromkeys(c.group for c in time_table.columns if c.key.endswith(":time") and c.group != "Mean"))
    markers = "osD^v<>Pp*hX"
    fig = _figure(6.4, 4.4)
    ax = fig.add_subplot()
    colors = {line.method: f"C{i % 10}" for i, line in enumerate(time_table.lines)}
    plotted = 0
    for m_index, model in enumerate(models):
        for line in time_table.lines:
            macro = line.cells.get(f"{model}:macro")
            seconds = line.cells.get(f"{model}:time")
            if macro is None or macro.value is None:
                continue
            if line.method == layout.raw or seconds is None or seconds.value is None:
                if line.method == layout.raw:
                    ax.axhline(macro.value, color="grey", linestyle="--", linewidth=0.8)
                    ax.annotate(_text(f"Raw ({model})"), (0, macro.value), fontsize=7, color="grey",
                                xycoords=("axes fraction", "data"), va="bottom")
                continue
            ax.scatter(seconds.value / 3600.0, macro.value, color=colors[line.method],
                       marker=markers[m_index % len(markers)], s=40, zorder=3)
            ax.annotate(_text(line.method_label), (seconds.value / 3600.0, macro.value), fontsize=7,
                        xytext=(4, 3), textcoords="offset points")
            plotted += 1
    if not plotted:
        return "accuracy vs training time: no method has both a macro score and a training time"
    for m_index, model in enumerate(models):
        ax.scatter([], [], color="black", marker=markers[m_index % len(markers)], label=_text(model))
    ax.legend(title="model", fontsize=8, title_fontsize=8)
    ax.set_xlim(left=0)
    ax.set_xlabel("training time (h)")
    ax.set_ylabel("macro accuracy (%)")
    ax.set_title("Accuracy vs training time")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def gain_heatmap(accuracy: Table | None, layout: Layout, path: Path) -> Path | str:
    """Gain over Raw (percentage points), models by benchmarks, one panel per method."""
    if accuracy is None:
        return "gain over raw: no accuracy table"
    keys = [c.key for c in accuracy.columns]
    labels = [c.label for c in accuracy.columns]
    methods = [m for m in layout.sort_methods(line.method for line in accuracy.lines) if m != layout.raw]
    panels = []
    for method in methods:
        grid, names = [], []
        for model, lines in accuracy.groups:
            raw = next((line for line in lines if line.method == layout.raw), None)
            mine = next((line for line in lines if line.method == method), None)
            if raw is None or mine is None:
                continue
            names.append(model)
            grid.append([mine.cells[k].value - raw.cells[k].value  # type: ignore[operator]
                         if mine.cells[k].value is not None and raw.cells[k].value is not None else math.nan
                         for k in keys])
        if grid:
            panels.append((layout.method_label(method), names, grid))
    if not panels:
        return "gain over raw: no model has both a Raw line and a trained method"
    import numpy as np

    limit = max(1e-9, max(abs(v) for _, _, g in panels for r in g for v in r if not math.isnan(v)) if any(
        not math.isnan(v) for _, _, g in panels for r in g for v in r) else 1.0)
    fig = _figure(max(4.8, 2.2 + 0.9 * len(keys)), max(2.8, 0.8 + sum(0.45 * len(n) + 1.0 for _, n, _ in panels)))
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, (title, names, grid) in zip(axes, panels):
        data = np.ma.masked_invalid(np.array(grid, dtype=float))
        image = ax.imshow(data, cmap="RdYlGn", vmin=-limit, vmax=limit, aspect="auto")
        ax.set_xticks(range(len(keys)), [_text(x) for x in labels], fontsize=8)
        ax.set_yticks(range(len(names)), [_text(n) for n in names], fontsize=8)
        ax.set_title(_text(f"{title}: gain over Raw (pp)"), fontsize=9)
        for i, row in enumerate(grid):
            for j, value in enumerate(row):
                if not math.isnan(value):
                    ax.text(j, i, f"{value:+.1f}", ha="center", va="center", fontsize=7)
        fig.colorbar(image, ax=ax, shrink=0.8)
    return _save(fig, path)


def popularity_gain(accuracy: Table | None, rows_by_id: dict[str, dict], layout: Layout,
                    out_dir: Path) -> list[Path | str]:
    """Gain over Raw per popularity quartile (PopQA s_pop), one panel per model and set."""
    if accuracy is None:
        return ["popularity quartiles: no accuracy table"]
    written: list[Path | str] = []
    sets = [c.key for c in accuracy.columns if c.key != "macro"]
    for name in sets:
        panels = []
        for model, lines in accuracy.groups:
            def quartiles(line) -> dict | None:
                ids = line.cells[name].row_ids if name in line.cells else []
                row = rows_by_id.get(ids[0]) if ids else None
                return ((row or {}).get("breakdowns") or {}).get("popularity_quartile")

            raw = next((quartiles(line) for line in lines if line.method == layout.raw), None)
            bars = []
            for line in lines:
                mine = quartiles(line)
                if line.method == layout.raw or raw is None or mine is None or mine["edges"] != raw["edges"]:
                    continue
                bars.append((line.method_label, [100.0 * (a - b) if a is not None and b is not None else 0.0
                                                 for a, b in zip(mine["accuracy"], raw["accuracy"])]))
            if bars:
                panels.append((model, bars))
        if not panels:
            continue
        fig = _figure(3.2 * len(panels) + 0.8, 3.4)
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        for ax, (model, bars) in zip(axes, panels):
            width = 0.8 / len(bars)
            for index, (label, gains) in enumerate(bars):
                ax.bar([q + index * width for q in range(4)], gains, width=width, label=_text(label))
            ax.set_xticks([q + 0.4 - width / 2 for q in range(4)], ["Q1\n(rare)", "Q2", "Q3", "Q4\n(popular)"],
                          fontsize=8)
            ax.axhline(0, color="black", linewidth=0.6)
            ax.set_title(_text(model), fontsize=9)
            ax.set_ylabel("gain over Raw (pp)", fontsize=8)
            ax.legend(fontsize=7)
        fig.suptitle(_text(f"{layout.set_label(name)}: gain by popularity quartile"), fontsize=10)
        written.append(_save(fig, out_dir / f"popularity_{name}.png"))
    if not written:
        written.append("popularity quartiles: skipped, no evaluated samples carry a `popularity` field "
                       "(PopQA s_pop) for both Raw and a trained method of the same model")
    return written
