"""Read what the viewer shows of one run directory, tolerantly (viewer/schema.py).

A row's `source` (`run:/abs/run-dir`, record.py) names its run directory. A publish from a
store whose run directories moved or were deleted still publishes the run's page, saying that
the directory is gone; a file cut by a kill loses its last line, counted, not the page.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import schema


@dataclass
class RunFiles:
    run_dir: Path | None
    run: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    rollouts: list[dict[str, Any]] | None = None
    records: list[dict[str, Any]] | None = None
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # what the run lacks, one line each

    @property
    def group_size(self) -> int | None:
        value = (self.config.get("train") or {}).get("completions_per_question")
        return value if isinstance(value, int) and value > 0 else None


def locate(row: dict[str, Any]) -> Path | None:
    """The run directory a row was recorded from, when it is still there."""
    source = str(row.get("source") or "")
    if not source.startswith("run:"):
        return None
    path = Path(source[len("run:"):])
    return path if (path / "run.json").is_file() else None


def read_jsonl(path: Path, missing: list[str], name: str) -> list[dict[str, Any]]:
    """The JSON objects of a .jsonl file; lines that are not one are counted in `missing`."""
    out, bad = [], 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError:
                bad += 1
                continue
            if isinstance(item, dict):
                out.append(item)
            else:
                bad += 1
    if bad:
        missing.append(f"{name}: {bad} line(s) are not JSON objects (cut by a kill?), skipped")
    return out


def _mapping(path: Path, loader) -> dict[str, Any]:
    try:
        data = loader(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def read(run_dir: Path | None, sets: list[str], trained: bool) -> RunFiles:
    """The run's files for the viewer; `sets` are the evaluation sets its rows cover."""
    if run_dir is None:
        return RunFiles(None, missing=["the run directory was not found when publishing (moved or deleted): "
                                       "this page shows only what the leaderboard store holds"])
    files = RunFiles(run_dir, run=_mapping(run_dir / "run.json", json.loads))
    if trained:  # the group size, for rollouts written without `group`
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        files.config = _mapping(run_dir / "config.yaml", lambda text: yaml.load(text, Loader=loader))
    if trained:
        for name in (schema.ROLLOUTS, schema.RECORDS):
            path = run_dir / name
            if not path.is_file():
                files.missing.append(f"{name}: absent; {schema.WITHOUT[name]}")
                continue
            items = read_jsonl(path, files.missing, name)
            files.missing += schema.field_notes(items, name)
            items = schema.split_required(items, name)
            if name == schema.ROLLOUTS:
                files.rollouts = items
            else:
                files.records = items
        for name in (schema.LOG, schema.ADAPTER_DELTA):
            if not (run_dir / name).is_file():
                files.missing.append(f"{name}: absent; {schema.WITHOUT[name]}")
    for set_name in sets:
        name = schema.SAMPLES.format(set=set_name)
        path = run_dir / name
        if not path.is_file():
            files.missing.append(f"{name}: absent; no evaluation samples of {set_name}")
            continue
        items = read_jsonl(path, files.missing, name)
        files.missing += [note.replace(schema.SAMPLES, name) for note in schema.field_notes(items, schema.SAMPLES)]
        files.samples[set_name] = schema.split_required(items, schema.SAMPLES)
    return files
