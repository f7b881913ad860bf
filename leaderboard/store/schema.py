"""Schemas of the files the leaderboard reads and writes, and a small validator.

The schemas are JSON Schema (draft 2020-12 subset: type, enum, const, anyOf, properties,
required, additionalProperties, minProperties, items, minItems, minimum, maximum,
minLength, pattern; plus `registered`, a name of a kind of factrl.harness.core.registry, which other
validators ignore), so other tools can validate with any JSON Schema library; `harness
leaderboard schema NAME` prints one. The validator below implements exactly that subset,
because the harness does not depend on `jsonschema`; every message names the path of the
offending field.
"""
from __future__ import annotations

import math
import re
from typing import Any

from factrl.harness.core import registry

ROW_SCHEMA_ID = "factrl.leaderboard.row/1"
RESULTS_SCHEMA_ID = "factrl.leaderboard.results/1"
EVAL_METRICS_SCHEMA_ID = "factrl.eval.metrics/1"
TIMINGS_SCHEMA_ID = "factrl.timings/1"

_STR = {"type": "string"}
_STR_OR_NULL = {"type": ["string", "null"]}
_HASH = {"type": "string", "pattern": "^[0-9a-fA-F]{6,64}$"}
_HASH_OR_NULL = {"type": ["string", "null"], "pattern": "^[0-9a-fA-F]{6,64}$"}
_COUNT = {"type": "integer", "minimum": 0}


def _obj(required: dict[str, Any], optional: dict[str, Any] | None = None, extra: bool = True) -> dict:
    return {"type": "object", "required": list(required), "properties": {**required, **(optional or {})},
            "additionalProperties": extra}


METRIC = _obj({"value": {"type": "number"}, "n": _COUNT, "higher_is_better": {"type": "boolean"}},
              {"stderr": {"type": ["number", "null"], "minimum": 0}})
SET = _obj({"name": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$"},
            "task": {"type": "string", "registered": "tasks"}, "source": _STR,
            "sha256": _HASH, "version": {"type": ["string", "integer"]}},
           {"revision": _STR_OR_NULL, "count": _COUNT})
SCORER = _obj({"name": _STR, "version": {"type": ["string", "integer"]}})
MODEL = _obj({"name": {"type": "string", "minLength": 1}, "id": _STR_OR_NULL},
             {"revision": _STR_OR_NULL, "sha256": _HASH_OR_NULL, "path": _STR_OR_NULL})
ADAPTER = {"type": ["object", "null"], "required": ["sha256"],
           "properties": {"path": _STR_OR_NULL, "sha256": _HASH}}
GENERATION = _obj({"backend": _STR, "model": MODEL, "prompt_version": {"type": ["string", "integer"]},
                   "prompt_hash": _HASH, "decoding": {"type": "object"}},
                  {"adapter": ADAPTER, "limit": {"type": ["integer", "null"], "minimum": 1}})
METRICS = {"type": "object", "minProperties": 1, "additionalProperties": METRIC}

EVAL_METRICS_SCHEMA = _obj({"schema": {"const": EVAL_METRICS_SCHEMA_ID}, "set": SET, "scorer": SCORER,
                            "generation": GENERATION, "metrics": METRICS}, {"created": _STR_OR_NULL})

PHASE = _obj({"seconds": {"type": "number", "minimum": 0}, "calls": _COUNT})
DEVICE = _obj({"kind": _STR, "name": _STR, "count": _COUNT})
TIMINGS_SCHEMA = _obj({"schema": {"const": TIMINGS_SCHEMA_ID},
                       "phases": {"type": "object", "additionalProperties": PHASE},
                       "total_s": {"type": "number", "minimum": 0}, "gpu_hours": {"type": "number", "minimum": 0},
                       "device": DEVICE},
                      {"segments": {"type": "array"}, "steps": {"type": ["integer", "null"]},
                       "attempts": _COUNT, "mixed_devices": {"type": "boolean"}})

ROW_SCHEMA = _obj({
    "schema": {"const": ROW_SCHEMA_ID},
    "row_id": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
    "leaderboard_version": {"type": "string", "minLength": 1},
    "run": _obj({"run_id": {"type": "string", "minLength": 1}, "kind": _STR},
                {"started": _STR_OR_NULL, "finished": _STR_OR_NULL, "status": _STR_OR_NULL,
                 "attempts": {"type": ["integer", "null"]}}),
    "method": _obj({"name": {"type": "string", "minLength": 1}, "config_hash": _HASH},
                   {"version": {"type": ["string", "integer", "null"]}}),
    "config_hash": _HASH_OR_NULL,
    "model": MODEL,
    "adapter": ADAPTER,
    "seed": {"type": ["integer", "null"]},
    "pool": {"type": ["object", "null"], "properties": {"name": _STR_OR_NULL, "path": _STR_OR_NULL,
                                                         "sha256": _HASH_OR_NULL}},
    "set": SET,
    "scorer": SCORER,
    "generation": GENERATION,
    "metrics": METRICS,
    "timer": {"anyOf": [{"type": "null"}, TIMINGS_SCHEMA]},
    "harness": _obj({"version": _STR, "git_commit": _STR_OR_NULL}),
    "date": _STR,
}, {"evaluated": _STR_OR_NULL, "source": _STR_OR_NULL, "breakdowns": {"type": "object"},
    "steps": {"type": ["integer", "null"]},
    # Reward components that can change a result (docs/CONTRACTS.md); optional,
    # so rows recorded before them stay valid and count as having no stand-in.
    "components": {"type": "object", "additionalProperties": {"type": "object"}},
    "stand_ins": {"type": "array", "items": _obj({"name": {"type": "string", "minLength": 1},
                                                  "label": {"type": "string", "minLength": 1}})},
    # Judged evaluations: the eval metrics file's `judged` sections (judge, seed, counts, components).
    "judged": {"type": "object"},
    # Optional, derived from samples.jsonl: per-question 0/1 correctness for the
    # paired bootstrap (outcomes.py) and answer diagnostics for the flags (diagnostics.py).
    "outcomes": _obj({"field": _STR, "n": _COUNT, "ids_sha256": _HASH, "encoding": _STR, "bits": _STR}),
    "diagnostics": {"type": ["object", "null"]},
    # Optional: calibration of stated confidences, the eval metrics file's `calibration`
    # (evals/calibration.py: counts, Brier and ECE with their intervals).
    "calibration": _obj({"n_with_confidence": _COUNT, "n_total": _COUNT,
                         "brier": _obj({"value": {"type": "number"}}), "ece": _obj({"value": {"type": "number"}})}),
    # Optional, derived: per-question format / abstention / answer length (behaviour.py) and the
    # per-step training curves with the adapter's change (leaderboard/curves.py).
    "behaviour": _obj({"encoding": _STR, "n": _COUNT, "ids_sha256": _HASH}),
    "training": _obj({"schema": _STR, "steps": {"type": "array", "items": {"type": "integer"}},
                      "curves": {"type": "object"}})},
    extra=False)

RESULTS_SCHEMA = _obj({
    "schema": {"const": RESULTS_SCHEMA_ID},
    "results": {"type": "object", "additionalProperties": {"type": "object"}},
    "versions": {"type": "object"},
    "n-samples": {"type": "object"},
    "higher_is_better": {"type": "object"},
    "task_hashes": {"type": "object"},
    "config": {"type": "object"},
    "model_name": _STR,
    "factrl": _obj({"rows": {"type": "array", "minItems": 1, "items": ROW_SCHEMA}}),
}, {"git_hash": _STR_OR_NULL, "date": {"type": ["number", "string"]}})

SCHEMAS = {"row": ROW_SCHEMA, "results": RESULTS_SCHEMA, "eval-metrics": EVAL_METRICS_SCHEMA,
           "timings": TIMINGS_SCHEMA}
_TYPES = {"string": str, "object": dict, "array": list, "boolean": bool, "null": type(None)}


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return isinstance(value, _TYPES[kind])


def errors(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Every violation of `schema` by `value`, as 'path: problem' strings (empty when valid)."""
    where = path or "(top)"
    if "anyOf" in schema:
        options = [errors(value, option, path) for option in schema["anyOf"]]
        return [] if any(not o for o in options) else min(options, key=len)
    if "const" in schema and value != schema["const"]:
        return [f"{where}: must be {schema['const']!r}, got {value!r}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: must be one of {schema['enum']}, got {value!r}"]
    if "registered" in schema and value not in registry.names(schema["registered"]):  # a name registry kind
        return [f"{where}: must be one of {registry.names(schema['registered'])} (`harness sets`), got {value!r}"]
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(value, k) for k in kinds):
            shown = "NaN/inf" if isinstance(value, float) and not math.isfinite(value) else type(value).__name__
            return [f"{where}: must be {' or '.join(kinds)}, got {shown}"]
    found: list[str] = []
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            found.append(f"{where}: must not be empty")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            found.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if _is(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            found.append(f"{where}: {value} is below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            found.append(f"{where}: {value} is above {schema['maximum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        found += [f"{path + '.' if path else ''}{key}: missing" for key in schema.get("required", [])
                  if key not in value]
        if len(value) < schema.get("minProperties", 0):
            found.append(f"{where}: must have at least {schema['minProperties']} entries")
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if key in props:
                found += errors(item, props[key], sub)
            elif extra is False:
                found.append(f"{sub}: unknown field")
            elif isinstance(extra, dict):
                found += errors(item, extra, sub)
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            found.append(f"{where}: must have at least {schema['minItems']} items")
        if "items" in schema:
            for index, item in enumerate(value):
                found += errors(item, schema["items"], f"{path}[{index}]")
    return found


def schema_document(name: str) -> dict[str, Any]:
    """A standalone JSON Schema document for `harness leaderboard schema NAME`."""
    ids = {"row": ROW_SCHEMA_ID, "results": RESULTS_SCHEMA_ID, "eval-metrics": EVAL_METRICS_SCHEMA_ID,
           "timings": TIMINGS_SCHEMA_ID}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": ids[name], **SCHEMAS[name]}
