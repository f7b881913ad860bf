"""Leaderboard versions: what each one freezes, and the check a row must pass to join one.

A leaderboard version freezes everything that changes a score without changing the
model: the scorer and its version, each evaluation set's content hash (and how much of it
is evaluated), the prompt, and the decoding preset. Rows of different versions never share
a table; within a version every such field is equal wherever two rows are compared.

A frozen field is pinned in one of two places:
- here, in `VERSIONS` (global: every store refuses a row that disagrees);
- in the store, by the first row recorded for the version (local: a field this file leaves
  open is fixed by that row, and later rows must agree). `harness leaderboard versions`
  prints both, so a maintainer can copy a store's pins here when a version is published.

A row that disagrees is refused with the field, its value and the frozen value; it is never
silently filed under another version. Bumping a version means adding an entry here and a
dated entry in leaderboard/CHANGELOG.md (a test checks that both exist).
"""
from __future__ import annotations

import json
import math
from typing import Any

LEADERBOARD_VERSION = "1"

VERSIONS: dict[str, dict[str, Any]] = {
    "1": {
        "date": "2026-11-29",
        "summary": "docs/PROTOCOL.md §6 evaluation: five closed-book sets + macro, TruthfulQA, multi-hop EM/F1.",
        # Prompt 1 of factrl.harness.core.prompts (the shared system prompt, no anti-loop line).
        "prompt": {"version": "1", "hash": "c22192799d5ac4ef"},
        # scorer name -> version (evals/scorers/default.py SCORER_VERSION; evals/scorers/corver_official.py VERSION).
        "scorers": {"default": "1.1", "corver-official": "corver-eval_triviaqa@36b2390"},
        # set name -> subset of {sha256, version, count, task, limit, scorer, scorer_version};
        # model name -> decoding keys that must match. Left to the first row in each store
        # (see the module docstring) until results of this version are published.
        "sets": {},
        "decoding": {},
    },
}


def current_version() -> str:
    return LEADERBOARD_VERSION


def get_spec(version: str | None) -> tuple[str, dict[str, Any]]:
    """(version, spec) for `version` (None = current); unknown versions are a user error."""
    from factrl.harness.core.errors import HarnessError

    name = str(version) if version not in (None, "") else LEADERBOARD_VERSION
    if name not in VERSIONS:
        raise HarnessError(f"unknown leaderboard version {name!r}; valid: {', '.join(VERSIONS)} "
                           "(new versions are added in leaderboard/store/versions.py with a CHANGELOG.md entry).")
    return name, VERSIONS[name]


def canonical(value: Any) -> str:
    """JSON text used to compare frozen values: sorted keys, 1.0 == 1, None-valued keys dropped."""

    def norm(item: Any) -> Any:
        if isinstance(item, dict):
            return {str(k): norm(v) for k, v in item.items() if v is not None}
        if isinstance(item, (list, tuple)):
            return [norm(v) for v in item]
        if isinstance(item, bool):
            return item
        if isinstance(item, float) and math.isfinite(item) and item.is_integer():
            return int(item)
        return item

    return json.dumps(norm(value), sort_keys=True, separators=(",", ":"))


def model_key(model: dict[str, Any]) -> str:
    """Identity under which rows are grouped: name plus what pins the weights."""
    pin = model.get("sha256") or model.get("revision") or ""
    return f"{model.get('name')}@{pin[:12]}" if pin else str(model.get("name"))


def set_pin(row: dict[str, Any]) -> dict[str, Any]:
    """What makes two results on a set comparable: same data, same subset, same scorer."""
    s, g, sc = row["set"], row["generation"], row["scorer"]
    return {"sha256": s.get("sha256"), "version": s.get("version"), "count": s.get("count"),
            "task": s.get("task"), "limit": g.get("limit"), "scorer": sc.get("name"),
            "scorer_version": sc.get("version")}


def frozen_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The row's values of every frozen field, keyed as the store pins them."""
    g = row["generation"]
    set_name = row["set"]["name"]
    return {
        "prompt": {"version": g.get("prompt_version"), "hash": g.get("prompt_hash")},
        f"scorer:{row['scorer']['name']}": row["scorer"].get("version"),
        f"set:{set_name}": set_pin(row),
        f"decoding:{set_name}:{model_key(row['model'])}": g.get("decoding") or {},
    }


def check_spec(row: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """Disagreements between a row and the fields its version pins in this file."""
    problems: list[str] = []
    g = row["generation"]
    prompt = spec.get("prompt") or {}
    if prompt and (str(g.get("prompt_version")), g.get("prompt_hash")) != (str(prompt["version"]), prompt["hash"]):
        problems.append(f"generation.prompt_version/prompt_hash = {g.get('prompt_version')}/{g.get('prompt_hash')}, "
                        f"version freezes {prompt['version']}/{prompt['hash']}")
    scorer = row["scorer"]
    frozen_scorer = (spec.get("scorers") or {}).get(scorer["name"])
    if frozen_scorer is not None and str(scorer.get("version")) != str(frozen_scorer):
        problems.append(f"scorer {scorer['name']} version {scorer.get('version')}, version freezes {frozen_scorer}")
    frozen_set = (spec.get("sets") or {}).get(row["set"]["name"]) or {}
    actual = set_pin(row)
    for key, value in frozen_set.items():
        if canonical(actual.get(key)) != canonical(value):
            problems.append(f"set {row['set']['name']}: {key} = {actual.get(key)!r}, version freezes {value!r}")
    preset = (spec.get("decoding") or {}).get(row["model"].get("name")) or {}
    decoding = g.get("decoding") or {}
    for key, value in preset.items():
        if canonical(decoding.get(key)) != canonical(value):
            problems.append(f"decoding.{key} = {decoding.get(key)!r} for {row['model'].get('name')}, "
                            f"version freezes {value!r}")
    return problems


# What a user changes to move a frozen value: the option name of each part of a pin.
_SET_FIELDS = {"limit": "eval.limit", "sha256": "set content (sha256)", "count": "set size",
               "version": "set version", "task": "set task", "scorer": "scorer", "scorer_version": "scorer version"}


def _shown(value: Any) -> Any:
    if value is None:
        return "null"  # as the option is written (eval.limit=null: the whole set)
    return value[:12] if isinstance(value, str) and len(value) == 64 else value  # a sha256: its prefix


def pin_differences(key: str, new: str, stored: str) -> list[tuple[str, Any, Any]]:
    """(option, new value, frozen value) for each part of pin `key` (a frozen_fields key) that
    differs between two canonical values: `set:demo` with another limit is ("eval.limit", 8, 4)."""
    mine, theirs = json.loads(new), json.loads(stored)
    if not (isinstance(mine, dict) and isinstance(theirs, dict)):
        what = f"scorer {key.partition(':')[2]} version" if key.startswith("scorer:") else key
        return [(what, mine, theirs)]
    kind = key.partition(":")[0]
    parts = [p for p in sorted(set(mine) | set(theirs)) if canonical(mine.get(p)) != canonical(theirs.get(p))]
    if kind == "set" and "limit" in parts:  # count and sha256 are of the kept records: they follow the limit
        parts = [p for p in parts if p not in ("count", "sha256")]
    out = []
    for part in parts:
        what = (_SET_FIELDS.get(part, f"set {part}") if kind == "set"
                else f"model.decoding.{part}" if kind == "decoding" else f"{kind} {part}")
        out.append((what, _shown(mine.get(part)), _shown(theirs.get(part))))
    return out or [(key, mine, theirs)]
