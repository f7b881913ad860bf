"""The table model every leaderboard table is built on: `Column`, `Cell`, `Line`, `Table`, the
`Layout` (labels and order), number formats (`pct`, `hmm`) and the marks (`mark`, `differences`,
`subset_notes`). The paper's tables themselves are paper.py; build.py builds them all.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from factrl.harness.core import registry
from factrl.harness.core.errors import ConfigError
from factrl.harness.core.registry import display_label  # Method.label, read from source (no import)

from ..guards import method_base, method_guards
from ..store.versions import model_key


def accuracy_tasks() -> tuple[str, ...]:
    """Tasks whose sets are columns of the accuracy table (registry: TaskInfo.table)."""
    return registry.tasks_of_table("accuracy")


def multihop_tasks() -> tuple[str, ...]:
    return registry.tasks_of_table("multihop")


@dataclass
class Column:
    key: str
    label: str
    group: str | None = None  # a spanning header above (model or set name)
    numeric: bool = True
    higher_is_better: bool = True  # False for times: the page's first click sorts shortest first


@dataclass
class Cell:
    value: float | None = None  # percent, seconds or ratio: what sorting uses
    text: str = "—"
    mark: str = ""  # "best" | "second" | ""
    diff: float | None = None  # focus line only: difference to the best competitor (pp)
    row_ids: list[str] = field(default_factory=list)
    # Uncertainty (uncertainty.py): count, standard error or seed std (pp), seeds,
    # the focus difference's interval (pp) and (diff, low, high) to Raw; flags of its rows.
    n: int | None = None
    se: float | None = None
    std: float | None = None
    seeds: int = 1
    ci: tuple[float, float] | None = None
    vs_raw: tuple[float, float | None, float | None] | None = None
    # Minimum detectable differences (pp, stats.py) of `diff` and of the difference to Raw.
    mde: float | None = None
    vs_raw_mde: float | None = None
    flags: list[str] = field(default_factory=list)
    strict: float | None = None  # strict accuracy (%, diagnostics.py), mean over the cell's seed rows
    strict_rule: str | None = None  # its rule version ("2"; "1" for rows recorded before v2)
    brier: float | None = None  # Brier score and ECE of stated confidences (evals/calibration.py),
    ece: float | None = None  # fractions, means over the cell's seed rows; None unless all state some


@dataclass
class Line:
    model: str  # display label of the model
    method: str  # method name as stored
    method_label: str
    cells: dict[str, Cell] = field(default_factory=dict)
    run_ids: list[str] = field(default_factory=list)
    stand_ins: list[str] = field(default_factory=list)  # labels of stand-in components behind the line
    seeds: int = 1  # seed runs aggregated into this line (accuracy table)
    vectors: dict[str, Any] = field(default_factory=dict, repr=False)  # set -> (ids hash, outcomes)
    reconstructed: bool = False  # the method has no public code (marks.py)
    substitutes: list[str] = field(default_factory=list)  # "served X for the paper's Y" judges (marks.py)
    method_prompt: bool = False  # answered under a method's prompt addition (marks.py)
    movement: Any = None  # movement.Movement of a trained line of the accuracy table ("did not move")

    @property
    def row_ids(self) -> list[str]:
        seen: list[str] = []
        for cell in self.cells.values():
            seen += [r for r in cell.row_ids if r not in seen]
        return seen


@dataclass
class Table:
    name: str
    title: str
    columns: list[Column]
    groups: list[tuple[str | None, list[Line]]]
    notes: list[str] = field(default_factory=list)
    first_header: str = "Model"  # header of the group column ("" when groups are unnamed)
    footer: list[Line] = field(default_factory=list)  # lines after the groups (the gaming floor)
    wrap: bool = False  # long cell texts (the uncertainty views): the HTML page lets them wrap

    @property
    def lines(self) -> list[Line]:
        return [line for _, lines in self.groups for line in lines]


def pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def hmm(seconds: float | None) -> str:
    """h:mm rounded to the nearest minute (Table 18)."""
    if seconds is None:
        return "—"
    minutes = int(round(seconds / 60.0))
    return f"{minutes // 60}:{minutes % 60:02d}"


class Layout:
    """Labels and order shared by the tables (configs/leaderboard/layout/paper.yaml for methods;
    the sets' labels, order and Macro membership are their registry entries')."""

    def __init__(self, settings: dict[str, Any]):
        from ..settings import FloorsSettings, layout_defaults

        settings = {**layout_defaults(), **settings}  # a key left out keeps paper.yaml's
        self.settings = settings
        self.raw = settings["raw_method"]
        self.floors = FloorsSettings.from_mapping(settings["floors"])
        self.focus = settings.get("focus_method") or None  # neutral unless a focus is asked for
        self.reference = settings.get("reference_method")
        for key in ("set_order", "macro_sets"):
            if settings.get(key) is not None:
                raise ConfigError(f"layout {key}: the sets' order and Macro membership are their registry entries "
                                  "(docs/ADDING_AN_EVAL_SET.md); remove the key.")
        known = registry.sets_in_order()
        self.set_order = [s.name for s in known]
        self.macro_sets = [s.name for s in known if s.macro]
        relabel = dict(settings.get("set_labels") or {})  # a layout may relabel a registered set
        for name in relabel:
            registry.require("eval_sets", str(name), "layout set_labels")
        self.set_labels = {**{s.name: s.label for s in known}, **relabel}
        self.method_labels = dict(settings.get("method_labels") or {})

    def set_label(self, name: str) -> str:
        return self.set_labels.get(name, name)

    def method_label(self, name: str) -> str:
        base, guards = method_base(name), method_guards(name)  # a guarded line (leaderboard/guards.py)
        label = self.method_labels.get(base) or display_label(base)
        if guards:
            label = f"{label} (guarded: {', '.join(guards)})"
        return f"{label} (ours)" if name == self.focus else label

    def sort_sets(self, names: Iterable[str]) -> list[str]:
        order = {n: i for i, n in enumerate(self.set_order)}
        return sorted(set(names), key=lambda n: (order.get(n, len(order)), n))

    def sort_methods(self, names: Iterable[str]) -> list[str]:
        """Raw first, the focus method (if any) last (the paper's Table 1), the rest in config order."""
        order = {n: i for i, n in enumerate(self.method_labels)}
        return sorted(set(names), key=lambda n: (n != self.raw, n == self.focus,
                                                 order.get(method_base(n), len(order)), method_base(n), n))


def model_labels(rows: list[dict]) -> dict[str, str]:
    """Display label per model key: the name, plus the weights pin when two keys share it."""
    names: dict[str, set[str]] = {}
    for row in rows:
        names.setdefault(row["model"]["name"], set()).add(model_key(row["model"]))
    return {key: (key if len(keys) > 1 else name) for name, keys in names.items() for key in keys}


def mark(lines: list[Line], key: str, higher_is_better: bool = True, second: bool = True) -> None:
    """Bold the best and underline the second-best printed value of column `key`."""
    cells = [line.cells[key] for line in lines if key in line.cells and line.cells[key].value is not None]
    if len(cells) < 2:
        return
    shown = sorted({round(c.value, 2) for c in cells}, reverse=higher_is_better)  # type: ignore[arg-type]
    if len(shown) < 2:  # everyone ties: a mark on every line would say nothing
        return
    for cell in cells:
        rank = shown.index(round(cell.value, 2))  # type: ignore[arg-type]
        if rank == 0:
            cell.mark = "best"
        elif rank == 1 and second and len(cells) >= 3:
            cell.mark = "second"


def differences(lines: list[Line], keys: list[str], focus: str | None) -> None:
    """The focus line's difference to the best competitor, per column."""
    target = next((line for line in lines if line.method == focus), None)
    if target is None:
        return
    for key in keys:
        mine = target.cells.get(key)
        others = [line.cells[key].value for line in lines if line is not target and key in line.cells
                  and line.cells[key].value is not None]
        if mine is not None and mine.value is not None and others:
            mine.diff = mine.value - max(others)  # type: ignore[type-var]


def subset_notes(rows: list[dict], sets: list[str], layout: Layout) -> dict[str, str]:
    """{set: note} for sets evaluated on a prefix (`limit`); their headers get a dagger.

    The version pins the limit per set, so every row of a set shares it."""
    notes = {}
    for row in rows:
        name, limit = row["set"]["name"], row["generation"].get("limit")
        count = row["set"].get("count")
        # The evaluator may report `count` before or after the limit; either way a limit
        # that does not exceed it means a subset was scored.
        if name in sets and limit and (count is None or limit <= count):
            notes[name] = (f"† {layout.set_label(name)}: evaluated with limit={limit} ({min(limit, count or limit)} "
                           "questions), a subset that does not compare with full-set numbers.")
    return notes
