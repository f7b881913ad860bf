"""Training curves of a run, as a row keeps them (`training`), from train/log.jsonl.

The published pages plot each trained run's curves per step and flag a method that did not
move (tables/movement.py); both read the row, so a store published without its run
directories (rows moved between machines, an exported results file) still has them. What is
kept, per optimizer step (docs/CONTRACTS.md, "Rollouts, training curves and movement"):

- `reward`, `reward_std`, `kl`, `entropy`, `learning_rate`, `completions/mean_length`,
  `completions/clipped_ratio` (TRL's keys);
- of every `rewards/<m>/<name>` a method logs: `no_signal` (the share of completions without a
  signal), and every name ending in `_mean`, `_rate` or `_share` (its reward components and the
  behaviour rates it counts: CorVer `correctness_mean`, `format_rate`; KnowRL `refusal_rate`;
  FoRAG `supported_share`; NOVER `reasoning_reward_mean`), except timings and caches (names with
  `seconds` or `cache`). A key absent from a run is not kept, and not drawn.

    {"schema": "factrl.leaderboard.training/1", "steps": [1, 2, ...],
     "curves": {key: [value or null per step]}, "adapter_delta": train/adapter_delta.json or null}

Derived from the run directory, so it is not compared on a re-add (store/rows.py DERIVED).
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

SCHEMA = "factrl.leaderboard.training/1"
TOP_KEYS = ("reward", "reward_std", "kl", "entropy", "learning_rate", "completions/mean_length",
            "completions/clipped_ratio")
COMPONENT_SUFFIXES = ("_mean", "_rate", "_share")
SKIPPED_WORDS = ("seconds", "cache")
ADAPTER_DELTA_SCHEMA = "factrl.adapter_delta/1"


def kept(key: str) -> bool:
    """Whether a log.jsonl key is one of the curves a row keeps (module docstring)."""
    if key in TOP_KEYS:
        return True
    parts = key.split("/")
    if len(parts) != 3 or parts[0] != "rewards":
        return False
    name = parts[2]
    if any(word in name for word in SKIPPED_WORDS):
        return False
    return name == "no_signal" or name.endswith(COMPONENT_SUFFIXES)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def read_log(path: Path) -> list[dict[str, Any]]:
    """The per-step lines of a log.jsonl, one merged record per step in step order: a later line's
    keys win (a resumed run may repeat a step), and a step's other lines add their keys (TRL's
    closing summary, `train_runtime` and friends, carries the last step's number and must not
    erase that step's metrics). Lines that are not JSON objects with an integer `step` are skipped."""
    by_step: dict[int, dict[str, Any]] = {}
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                item = json.loads(line)
            except ValueError:
                continue  # a line cut by a kill
            if isinstance(item, dict) and isinstance(item.get("step"), int) and not isinstance(item["step"], bool):
                by_step[item["step"]] = {**by_step.get(item["step"], {}), **item}
    return [by_step[s] for s in sorted(by_step)]


def adapter_delta(run_dir: Path) -> dict[str, Any] | None:
    """train/adapter_delta.json when it follows its schema, else None."""
    path = run_dir / "train" / "adapter_delta.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == ADAPTER_DELTA_SCHEMA else None


def of_run(run_dir: Path) -> dict[str, Any] | None:
    """The row's `training` for a run directory, or None when it has no train/log.jsonl steps."""
    path = Path(run_dir) / "train" / "log.jsonl"
    if not path.is_file():
        return None
    steps = read_log(path)
    if not steps:
        return None
    keys = sorted({k for item in steps for k in item if kept(k)})
    curves = {k: [_number(item.get(k)) for item in steps] for k in keys}
    return {"schema": SCHEMA, "steps": [item["step"] for item in steps],
            "curves": {k: v for k, v in curves.items() if any(x is not None for x in v)},
            "adapter_delta": adapter_delta(Path(run_dir))}


def series(training: dict[str, Any] | None, key: str) -> tuple[list[int], list[float]]:
    """(steps, values) of one curve, steps without a value left out."""
    if not training:
        return [], []
    values = (training.get("curves") or {}).get(key) or []
    pairs = [(s, v) for s, v in zip(training.get("steps") or [], values) if v is not None]
    return [s for s, _ in pairs], [v for _, v in pairs]


def reward_key(training: dict[str, Any] | None) -> str | None:
    """The run's reward curve: TRL's `reward` (what it logs for every method)."""
    return "reward" if training and (training.get("curves") or {}).get("reward") else None
