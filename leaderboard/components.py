"""Provenance of reward components in rows and tables (docs/CONTRACTS.md).

A method and its version do not say everything that can change a result: CorVer with the
heuristic extractor is not CorVer with the paper's QuCo extractor. `harness run` copies the
engine's `train/components.json` into run.json as `components` ({name: {kind, backend,
model, revision, stand_in, label, note, ...}}) and `stand_ins` (sorted names). A row stores
both; every published table marks a line whose rows used a stand-in with `MARKER`, and a
legend names the stand-ins, so no one mistakes such a line for a paper-faithful run.
Rows without the fields (recorded before this existed, or evaluation-only runs) have none.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from factrl.harness.core.errors import DataError

MARKER = "‡"
CONTRACT = 'docs/CONTRACTS.md, "Provenance of reward components"'


def _from_file(run_dir: Path) -> dict[str, Any]:
    """train/components.json's components, for a run whose run.json predates the copy."""
    path = run_dir / "train" / "components.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: not valid JSON ({err}); rerun the training step that writes it.") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: must be a JSON object ({CONTRACT}); rerun the training step that writes it.")
    return data.get("components") or {}


def of_run(run: dict[str, Any], run_dir: Path) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """(components, stand_ins) for the rows of a run: components as recorded, stand-ins as
    [{"name", "label"}] from run.json's `stand_ins` and every component flagged `stand_in`."""
    where = run_dir / "run.json"
    components = run.get("components") if "components" in run else _from_file(run_dir)
    components = components or {}
    if not isinstance(components, dict) or not all(isinstance(v, dict) for v in components.values()):
        raise DataError(f"{where}: components must be a mapping of name -> object ({CONTRACT}); rerun "
                        "`harness run` to rewrite it.")
    names = run.get("stand_ins") or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise DataError(f"{where}: stand_ins must be a list of component names ({CONTRACT}); rerun "
                        "`harness run` to rewrite it.")
    # A component flagged as a stand-in is one even if the list forgot it: a mark is never lost.
    flagged = {name for name, item in components.items() if item.get("stand_in") is True}
    stand_ins = [{"name": name, "label": str((components.get(name) or {}).get("label") or name)}
                 for name in sorted(set(names) | flagged)]
    return components, stand_ins


def row_stand_ins(row: dict[str, Any]) -> list[tuple[str, str]]:
    """[(label, note)] of a row's stand-ins (none for rows without the field)."""
    out = []
    for item in row.get("stand_ins") or []:
        note = ((row.get("components") or {}).get(item["name"]) or {}).get("note")
        out.append((item["label"], str(note) if note else ""))
    return out


def mark_table(table: Any, rows_by_id: dict[str, dict[str, Any]]) -> None:
    """Set each line's `stand_ins` (labels) from the rows behind it and add the legend note;
    then the reconstructed and judge-substitute marks (marks.py)."""
    from .marks import mark_lines

    _mark_stand_ins(table, rows_by_id)
    mark_lines(table, rows_by_id)


def _mark_stand_ins(table: Any, rows_by_id: dict[str, dict[str, Any]]) -> None:
    users: dict[tuple[str, str], list[str]] = {}
    for line in table.lines:
        labels: set[str] = set()
        for rid in line.row_ids:
            row = rows_by_id.get(rid, {})
            # The time table's lines span models: name the model of the row that used it.
            who = f"{line.model or (row.get('model') or {}).get('name')} / {line.method_label}"
            for item in row_stand_ins(row):
                labels.add(item[0])
                users.setdefault(item, [])
                if who not in users[item]:
                    users[item].append(who)
        line.stand_ins = sorted(labels)
    if users:
        parts = [f"{label}" + (f" ({note})" if note else "") + f", used by {', '.join(who)}"
                 for (label, note), who in sorted(users.items())]
        table.notes.append(f"{MARKER} = ran with a stand-in component, not a paper-faithful run: "
                           + "; ".join(parts) + ".")
