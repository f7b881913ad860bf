"""Rows trained with a guard are lines of their own in every table.

A method keeps its original reward by default and gains named guards (docs/CONTRACTS.md
"Guards"; e.g. CorVer `correctness=strict`), which the run records in its components as a list
of `key=value` strings (`components.settings.guards`). Tables group rows by (model, method name),
so without this a guarded CorVer run and an original one would be averaged as two seeds of one
line. `table_view(row)` gives the tables a copy of a guarded row whose method name carries the
guards, `corver[correctness=strict;format_rule=single_block]`, and `method_base` / `method_guards`
read such a name back; the stored row (rows.csv, rows/<id>.json) keeps the method's own name.
Layout.method_label prints the line as `CorVer (guarded: correctness=strict, ...)`.
"""
from __future__ import annotations

from typing import Any


def row_guards(row: dict[str, Any]) -> list[str]:
    """The guards a row's reward ran with, as its settings component lists them (the probe's
    reading, harness/probe guards_of), sorted and each once; [] for an original reward."""
    from factrl.harness.probe.runner import guards_of

    return sorted({g for g in guards_of(row.get("components") or {}) if g.strip()})


def guarded_name(method: str, guards: list[str]) -> str:
    return f"{method}[{';'.join(guards)}]" if guards else method


def method_base(name: str) -> str:
    """`corver[...]` -> `corver`; a plain name unchanged."""
    return name.split("[", 1)[0] if name.endswith("]") else name


def method_guards(name: str) -> list[str]:
    """`corver[a=1;b=2]` -> ["a=1", "b=2"]; [] for a plain name."""
    if not name.endswith("]") or "[" not in name:
        return []
    return [g for g in name[name.index("[") + 1:-1].split(";") if g]


def table_view(row: dict[str, Any]) -> dict[str, Any]:
    """The row as the tables group it: unchanged without guards, else a shallow copy whose
    `method.name` carries them (`method.base` the method's own name)."""
    guards = row_guards(row)
    if not guards:
        return row
    method = dict(row.get("method") or {})
    method.update(base=method.get("name"), name=guarded_name(str(method.get("name")), guards), guards=guards)
    return {**row, "method": method}
