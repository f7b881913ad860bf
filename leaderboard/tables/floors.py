"""The gaming floor of each set in the accuracy table.

The floor of a set is the best accuracy of the versioned constant-answer panel
(factrl.evals.gaming_panel) under the scorer (name, options and version) the set's rows were
scored with: a line at or near it has learned nothing a constant answer would not get. It
is computed at publish time from the set itself, found through the rows' `set.source`
(`file:PATH`, the embedded demo set, or a file of the set's registered names in the layout's
`floors.data_dir`); the loaded set must have the rows' content hash (and `limit`), and the
installed scorer the rows' version, or the table says why there is no floor.

Scoring the panel takes seconds (TruthfulQA's ROUGE rule: ~7 s), so each floor is cached as
JSON under `<harness cache>/floors/`, keyed by set hash, limit, scorer and panel version.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from factrl.evals.gaming_panel import PANEL_VERSION, panel
from factrl.harness.core.errors import HarnessError

FLOOR_METHOD = "gaming-floor"


def cache_file(key: dict[str, Any], folder: str = "floors") -> Path:
    """Where a floor computed for `key` is cached (`<harness cache>/<folder>/<digest>.json`)."""
    from factrl.harness.services.models import cache_dir

    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    return cache_dir() / folder / f"{digest}.json"


def write_cache(path: Path, value: dict[str, Any]) -> None:
    """Atomic: a concurrent publish reads the old file or the new one, never half of one."""
    from factrl.harness.core.rundir import atomic_write

    atomic_write(path, json.dumps(value))


def load_row_set(row: dict[str, Any], data_dir: str | None):
    """The row's set as the evaluator loaded it, or a reason why it cannot be found."""
    from factrl.evals.sets import load_set

    info, limit = row["set"], row["generation"].get("limit")
    source = str(info.get("source") or "")
    try:
        if source.startswith("file:") and Path(source[5:]).is_file():
            return load_set(info["name"], data=source[5:], limit=limit)
        if source.startswith("embedded:"):
            return load_set(info["name"], limit=limit)
        if data_dir:
            return load_set(info["name"], data_dir=data_dir, limit=limit)
    except HarnessError as err:
        return f"cannot load it ({err})"
    return f"its data ({source or 'no source'}) is not on this machine; set floors.data_dir in the layout"


def row_scorer(row: dict[str, Any]):
    """The installed scorer of the row's name and options, or {"reason"} when it is missing or
    of another version than the one the row was scored with."""
    from factrl.evals.scorers import get_scorer

    info = row["scorer"]
    try:
        scorer = get_scorer(info["name"], **(info.get("options") or {}))
    except HarnessError as err:
        return {"reason": f"scorer {info['name']!r} is not available ({err})"}
    if str(scorer.version) != str(info["version"]):
        return {"reason": f"the rows were scored with {info['name']} {info['version']}, the installed "
                          f"scorer is {scorer.version}"}
    return scorer


def checked_set(row: dict[str, Any], data_dir: str | None):
    """The row's set, loaded and checked against its content hash, or {"reason"}."""
    eval_set = load_row_set(row, data_dir)
    if isinstance(eval_set, str):
        return {"reason": eval_set}
    if eval_set.sha256 != row["set"]["sha256"]:
        return {"reason": f"the set found at {eval_set.source} is not the one the rows were scored on (content hash)"}
    return eval_set


def set_floor(row: dict[str, Any], data_dir: str | None = None, use_cache: bool = True) -> dict[str, Any]:
    """{"value" (fraction), "answer", "form", "panel_version", "scorer"} or {"reason"} for a row's set."""
    from factrl.evals.metrics import aggregate

    info, scorer_info = row["set"], row["scorer"]
    key = {"set": info["sha256"], "limit": row["generation"].get("limit"), "scorer": scorer_info["name"],
           "scorer_version": str(scorer_info["version"]), "options": scorer_info.get("options") or {},
           "panel": PANEL_VERSION}
    cached = cache_file(key)
    if use_cache and cached.is_file():
        return json.loads(cached.read_text(encoding="utf-8"))
    scorer = row_scorer(row)
    if isinstance(scorer, dict):
        return scorer
    eval_set = checked_set(row, data_dir)
    if isinstance(eval_set, dict):
        return eval_set
    best: dict[str, Any] | None = None
    metrics = scorer.metrics(eval_set.task)
    for answer, form, completion in panel():
        value = aggregate(scorer.score(eval_set, [completion] * eval_set.count), metrics)["accuracy"]["value"]
        if best is None or value > best["value"]:
            best = {"value": value, "answer": answer, "form": form}
    out = {**best, "panel_version": PANEL_VERSION, "scorer": f"{scorer_info['name']} {scorer_info['version']}",
           "n": eval_set.count}  # type: ignore[dict-item]
    if use_cache:
        write_cache(cached, out)
    return out


def add_floor(table, rows: list[dict[str, Any]], layout) -> None:
    """Append the gaming-floor footer line and its notes to the accuracy table."""
    from .model import Cell, Line, pct

    options = layout.floors
    if not options.enabled or not table.lines:
        return
    by_set: dict[str, dict[str, Any]] = {}
    for row in rows:
        by_set.setdefault(row["set"]["name"], row)  # the version pins set and scorer: one row speaks for all
    line = Line("", FLOOR_METHOD, f"Gaming floor (constant answers, panel v{PANEL_VERSION})")
    found, missing = [], []
    for column in table.columns:
        row = by_set.get(column.key)
        if row is None:
            continue
        floor = set_floor(row, options.data_dir, use_cache=options.cache)
        if "reason" in floor:
            missing.append(f"{layout.set_label(column.key)}: {floor['reason']}")
            continue
        value = 100.0 * floor["value"]
        line.cells[column.key] = Cell(value, pct(value))
        shown = f"<answer>{floor['answer']}</answer>" if floor["form"] == "closed" else f"<answer>{floor['answer']}"
        found.append(f"{layout.set_label(column.key)} {value:.2f} ({shown!r})")
    if found:
        table.footer.append(line)
        table.notes.append(f"Gaming floor: the best score of the constant-answer panel v{PANEL_VERSION} "
                           f"(factrl.evals.gaming_panel) under the rows' scorer; a line near it has learned no more "
                           f"than a constant answer: " + "; ".join(found) + ".")
    if missing:
        table.notes.append("No gaming floor for " + "; ".join(missing) + ".")
