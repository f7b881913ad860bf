"""One leaderboard row = one (run, evaluation set) under one leaderboard version.

This module owns what a row must satisfy beyond its JSON Schema: the primary metric of its
task exists, fractions are fractions, every question stays in the denominator (docs/PROTOCOL.md §6),
its id is derived from its key, and it agrees with the fields its version freezes here.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from factrl.harness.core import registry
from factrl.harness.core.errors import HarnessError

from . import schema, versions


def primary_metrics(task: str) -> tuple[str, ...]:
    """Primary metric(s) of a task (its registry entry's `metrics`); a row without them cannot
    enter a table. A task no longer registered (its plugin uninstalled) keeps `accuracy`."""
    try:
        return tuple(registry.get("tasks", task).metrics)
    except HarnessError:
        return ("accuracy",)
# Metrics reported as fractions in [0, 1]; tables print them as percentages.
FRACTIONS = {"accuracy", "accuracy_one_way", "na_rate", "refusal_rate", "empty_rate", "format_rate", "em", "f1"}


def row_id(run_id: str, set_name: str, version: str) -> str:
    """Stable id of (run, set, version): re-recording the same run finds its row again."""
    return hashlib.sha256(f"{run_id}\0{set_name}\0{version}".encode()).hexdigest()[:16]


def expected_n(row: dict[str, Any]) -> int | None:
    """How many questions the primary metric must count: the set, or its first `limit`."""
    count, limit = row["set"].get("count"), row["generation"].get("limit")
    if count is None:
        return None
    return min(count, limit) if limit else count


def problems(row: dict[str, Any]) -> list[str]:
    """Why `row` cannot be stored (empty when it can); checks schema first, then meaning."""
    found = schema.errors(row, schema.ROW_SCHEMA)
    if found:
        return found
    name = row["set"]["name"]
    if row["row_id"] != row_id(row["run"]["run_id"], name, row["leaderboard_version"]):
        found.append("row_id: does not match (run_id, set, leaderboard_version); rows are not hand-edited")
    metrics = row["metrics"]
    for key in primary_metrics(row["set"]["task"]):
        if key not in metrics:
            found.append(f"metrics.{key}: missing (primary metric of task {row['set']['task']})")
    for key, metric in metrics.items():
        if key in FRACTIONS and not 0.0 <= metric["value"] <= 1.0:
            found.append(f"metrics.{key}.value = {metric['value']}: must be a fraction in [0, 1] "
                         "(tables print percentages; do not store them)")
    want = expected_n(row)
    for key in primary_metrics(row["set"]["task"]):
        if want is not None and key in metrics and metrics[key]["n"] != want:
            found.append(f"metrics.{key}.n = {metrics[key]['n']}, but set {name} has {want} questions "
                         "(docs/PROTOCOL.md §6: every question stays in the denominator)")
    try:
        _, spec = versions.get_spec(row["leaderboard_version"])
    except Exception as err:  # HarnessError from an unknown version
        return found + [f"leaderboard_version: {err}"]
    found += [f"frozen field: {p}" for p in versions.check_spec(row, spec)]
    return found


def primary(row: dict[str, Any], metric: str | None = None) -> float | None:
    """The row's value of `metric` (default: its task's first primary metric), or None."""
    key = metric or primary_metrics(row["set"]["task"])[0]
    item = row["metrics"].get(key)
    return None if item is None else float(item["value"])


# Fields that differ between two recordings of the same result without changing it: when it
# was recorded and from where (a run directory, or a results file exported from it).
VOLATILE = ("date", "source")
# Derived from samples.jsonl after the first release: not compared on a re-add, so a
# run recorded before them re-adds as unchanged (its stored row keeps none; --replace adds them).
DERIVED = ("outcomes", "diagnostics", "behaviour", "training", "calibration")
# Optional provenance added after the first release; a row without them is a row with none.
EMPTY_DEFAULTS = {"components": {}, "stand_ins": []}


def content(row: dict[str, Any]) -> dict[str, Any]:
    """What a row says, for deciding whether a re-add is the same row (no-op) or a change."""
    out = {k: v for k, v in row.items() if not k.startswith("_") and k not in VOLATILE + DERIVED}
    for key, empty in EMPTY_DEFAULTS.items():
        if out.get(key) in (None, empty):
            out.pop(key, None)
    return json.loads(versions.canonical(out))


def content_differences(old: dict[str, Any], new: dict[str, Any], limit: int = 3) -> list[str]:
    """The first `limit` fields (dotted paths) whose content differs, as 'path old -> new'."""
    found: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if len(found) >= limit or a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                walk(a.get(key), b.get(key), f"{path}.{key}" if path else key)
            return
        shown = [json.dumps(v, sort_keys=True) for v in (a, b)]
        shown = [s if len(s) <= 40 else s[:37] + "..." for s in shown]
        found.append(f"{path or '(row)'} {shown[0]} -> {shown[1]}")

    walk(content(old), content(new), "")
    return found
