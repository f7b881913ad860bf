"""Rows from a run directory (docs/CONTRACTS.md layout) and `record_run`.

Reads run.json (identity, and the reward components that can change a result),
config.yaml (resolved config: method, model, pool, train), timings.json (harness.core.timer;
absent for raw and evaluation-only runs) and every eval/<set>/metrics.json, and builds one
row per set. Input files are validated against their schemas first, so a malformed file is
reported by path and field, not as a KeyError or AttributeError.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import statistics
from pathlib import Path
from typing import Any

import yaml

from factrl.harness.core.errors import DataError, HarnessError
from factrl.harness.core.hashing import sha256_file

from . import components as componentlib
from . import curves as curvelib
from . import diagnostics as diaglib
from . import settings
from .store import AddReport, Store, schema, versions
from .store import behaviour as behaviourlib
from .store import outcomes as outcomelib
from .store import rows as rowlib

RAW_KINDS = ("raw", "eval")  # run.json kinds of evaluation-only runs
RAW_METHOD = "raw"
CORRECT_FIELDS = ("correct", "score", "accuracy")  # first one present in a samples.jsonl row


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path} is missing; {what}") from None
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: not valid JSON ({err}); rerun the step that writes it.") from None


def _check(data: Any, spec: dict, path: Path) -> None:
    found = schema.errors(data, spec)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise DataError(f"{path}: {found[0]}{more}; the file does not follow docs/CONTRACTS.md.")


def _mapping(data: Any, path: Path, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise DataError(f"{path}: must be a mapping ({what}), got {type(data).__name__}; it was not written by "
                        "`harness run`: rerun it, or fix the file.")
    return data


def _section(config: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    """A config section that must be a mapping when present (`method: corver` is not one)."""
    value = config.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DataError(f"{path}: {key} must be a mapping (e.g. {key}: {{name: ...}}), got {type(value).__name__} "
                        f"{value!r}; rerun `harness run` to rewrite the resolved config.")
    return value


def short_hash(value: Any) -> str:
    return hashlib.sha256(versions.canonical(value).encode()).hexdigest()[:8]


def _pool(run: dict, config: dict, run_dir: Path) -> dict[str, Any] | None:
    """The training pool's identity; its hash from run.json, the config, or the file itself."""
    pool = config.get("pool") or {}
    recorded = run.get("pool") if isinstance(run.get("pool"), dict) else {}
    digest = recorded.get("sha256") or run.get("pool_sha256") or pool.get("sha256")
    path = pool.get("path")
    if not digest and path:
        candidate = Path(path) if Path(path).is_absolute() else run_dir / path
        for file in (candidate, Path(path)):
            if file.is_file():
                digest = sha256_file(file)
                break
    return {"name": pool.get("name"), "path": path, "sha256": digest}


def popularity_quartiles(samples_file: Path) -> dict[str, Any] | None:
    """Accuracy per popularity quartile, when every sample carries `popularity` (PopQA s_pop).

    Quartile edges come from the samples' own popularity values, so two runs of the same set
    (same hash and limit, which the version guarantees) get the same edges.
    """
    if not samples_file.is_file():
        return None
    pairs: list[tuple[float, float]] = []
    field = None
    with open(samples_file, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            item = json.loads(line)
            pop = item.get("popularity")
            field = field or next((f for f in CORRECT_FIELDS if f in item), None)
            if not isinstance(pop, (int, float)) or field is None or field not in item:
                return None  # one sample without popularity: no breakdown rather than a biased one
            pairs.append((float(pop), float(item[field])))
    if len(pairs) < 8:
        return None
    edges = statistics.quantiles([p for p, _ in pairs], n=4, method="inclusive")
    bins: list[list[float]] = [[], [], [], []]
    for pop, score in pairs:
        bins[sum(pop > e for e in edges)].append(score)
    return {"edges": [round(e, 6) for e in edges], "n": [len(b) for b in bins],
            "accuracy": [sum(b) / len(b) if b else None for b in bins], "field": field}


def rows_from_run(run_dir: str | os.PathLike, version: str | None = None) -> list[dict[str, Any]]:
    """One row per eval/<set>/metrics.json of the run, under leaderboard `version`."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise HarnessError(f"{run_dir} is not a run directory; pass the folder `harness run` printed.")
    run = _mapping(_read_json(run_dir / "run.json", "is this a run directory written by `harness run`?"),
                   run_dir / "run.json", "a JSON object of run fields")
    config_path = run_dir / "config.yaml"
    try:
        config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{config_path} is missing; the run directory is incomplete.") from None
    except yaml.YAMLError as err:
        raise DataError(f"{config_path}: invalid YAML ({' '.join(str(err).split())}).") from None
    config = _mapping(config if config is not None else {}, config_path, "the resolved config")
    for key in ("method", "pool", "train"):
        _section(config, key, config_path)
    components, stand_ins = componentlib.of_run(run, run_dir)
    run_id = run.get("run_id") or run_dir.name
    timings = None
    if (run_dir / "timings.json").is_file():
        timings = _read_json(run_dir / "timings.json", "")
        _check(timings, schema.TIMINGS_SCHEMA, run_dir / "timings.json")
    metric_files = sorted(run_dir.glob("eval/*/metrics.json"))
    if not metric_files:
        raise HarnessError(f"{run_dir} has no eval/<set>/metrics.json; evaluate the run first "
                           "(`harness eval`), then record it.")
    version, _ = versions.get_spec(version)
    method_cfg = config.get("method") or {}
    method = str(method_cfg.get("name") or run.get("method") or "")
    kind = str(run.get("kind") or "run")
    algorithm = run.get("method_algorithm")  # written by harness run; "none" = evaluation only
    trained = timings is not None or (algorithm not in (None, "none") if algorithm is not None
                                      else kind not in RAW_KINDS and method != RAW_METHOD)
    steps = (timings or {}).get("steps") or ((config.get("train") or {}).get("steps") if trained else None)
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    training = curvelib.of_run(run_dir) if trained else None  # per-step curves (curves.py)
    out = []
    for file in metric_files:
        metrics = _read_json(file, "")
        _check(metrics, schema.EVAL_METRICS_SCHEMA, file)
        generation = dict(metrics["generation"])
        model = dict(generation["model"])
        label, label_cfg = method, method_cfg
        if not trained and not generation.get("adapter"):
            # An evaluation-only run of the unmodified model is Raw, whatever the config's
            # default method says (`harness eval` composes the same root config).
            label, label_cfg = RAW_METHOD, {"name": RAW_METHOD}
        if generation.get("adapter") and label == RAW_METHOD:
            raise HarnessError(f"{file}: the run evaluated an adapter but its method is 'raw'; "
                               "rerun the evaluation with method=<the adapter's method> so the row is labelled.")
        row = {
            "schema": schema.ROW_SCHEMA_ID,
            "row_id": rowlib.row_id(run_id, metrics["set"]["name"], version),
            "leaderboard_version": version,
            "run": {"run_id": run_id, "kind": kind, "started": run.get("started"),
                    "finished": run.get("finished"), "status": run.get("status"), "attempts": run.get("attempts")},
            "method": {"name": label, "config_hash": short_hash(label_cfg),
                       "version": run.get("method_version", label_cfg.get("version")) if label == method else None},
            "config_hash": run.get("config_hash"),
            "model": model,
            "adapter": generation.get("adapter"),
            "seed": run.get("seed", config.get("seed")),
            "pool": _pool(run, config, run_dir) if trained else None,
            "set": dict(metrics["set"]),
            "scorer": dict(metrics["scorer"]),
            "generation": generation,
            "metrics": metrics["metrics"],
            "timer": timings,
            "steps": steps,
            "harness": {"version": str(run.get("harness_version") or ""), "git_commit": run.get("git_commit")},
            "date": now,
            "evaluated": metrics.get("created"),
            "source": f"run:{run_dir.resolve()}",
            "components": components,
            "stand_ins": stand_ins,
        }
        if isinstance(metrics.get("calibration"), dict):  # stated confidences: Brier, ECE (evals/calibration.py)
            row["calibration"] = metrics["calibration"]
        if isinstance(metrics.get("judged"), dict):  # FActScore-NPM / semantic checks: judge, seed, components
            row["judged"] = metrics["judged"]
        quartiles = popularity_quartiles(file.parent / "samples.jsonl")
        if quartiles:
            row["breakdowns"] = {"popularity_quartile": quartiles}
        samples = outcomelib.read_samples(file.parent / "samples.jsonl")
        if samples:  # per-question outcomes (paired bootstrap) and answer diagnostics (flags)
            vector = outcomelib.encode(samples)
            if vector is not None:
                row["outcomes"] = vector
            row["diagnostics"] = diaglib.compute(samples, task=metrics["set"].get("task"))
            behaviour = behaviourlib.encode(samples)  # format, abstention, length per question
            if behaviour is not None:
                row["behaviour"] = behaviour
        if training is not None:
            row["training"] = training
        out.append(row)
    return out


def default_store() -> Path:
    return Path(settings.load()["store"])


def add_run(run_dir: str | os.PathLike, store_path: str | os.PathLike | None = None,
           version: str | None = None, replace: bool = False) -> AddReport:
    """`record_run`, returning what happened to each row (added, replaced, unchanged)."""
    rows = rows_from_run(run_dir, version)
    return Store(store_path or default_store()).add(rows, replace=replace)


def record_run(run_dir: str | os.PathLike, store_path: str | os.PathLike | None = None,
               version: str | None = None, replace: bool = False) -> list[str]:
    """Validate and store one row per evaluated set of `run_dir`; returns the row ids.

    All sets of the run are stored in one transaction or none; a refusal raises
    `RowRefused` (a HarnessError) naming each bad field. Re-recording identical rows is a
    no-op; rows that changed are refused unless `replace`; a store that cannot be used raises
    a one-line StoreError (a DataError).
    """
    return add_run(run_dir, store_path, version, replace).ids
