"""Results files: lm-evaluation-harness-like JSON, one file per run, for other tools.

The top level follows lm-evaluation-harness's results file (`results` with "metric,none"
and "metric_stderr,none" keys, `versions`, `n-samples`, `higher_is_better`, `configs`,
`config`, `task_hashes`, `git_hash`, `date`, `model_name`), so tools that read those files
read ours. The authoritative copy is `factrl.rows`: the leaderboard rows themselves, which
`harness leaderboard add RESULTS.json` validates and stores. Import also checks that the
lm-eval-style numbers still equal the rows', so an edited file is refused, not half-used.
"""
from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

from factrl.harness.core.errors import DataError

from .store import rows as rowlib
from .store import schema


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "run"


def group_by_run(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in rows:
        out.setdefault(row["run"]["run_id"], []).append(row)
    return out


def _epoch(iso: str | None) -> float | None:
    try:
        return dt.datetime.fromisoformat(str(iso)).timestamp()
    except ValueError:
        return None


def export_results(run_rows: list[dict]) -> dict[str, Any]:
    """The results file of one run (all its rows must share the run id)."""
    if not run_rows or len({r["run"]["run_id"] for r in run_rows}) != 1:
        raise ValueError("export_results takes the rows of exactly one run")
    first = run_rows[0]
    model, gen = first["model"], first["generation"]
    model_args = f"pretrained={model.get('id') or model.get('path') or model['name']}"
    if model.get("revision"):
        model_args += f",revision={model['revision']}"
    if first.get("adapter"):
        model_args += f",peft={first['adapter'].get('path')}"
    data: dict[str, Any] = {
        "schema": schema.RESULTS_SCHEMA_ID, "results": {}, "group_subtasks": {}, "configs": {}, "versions": {},
        "n-shot": {}, "higher_is_better": {}, "n-samples": {}, "task_hashes": {},
        "config": {"model": gen["backend"], "model_args": model_args, "limit": gen.get("limit"),
                   "gen_kwargs": gen.get("decoding"), "random_seed": first.get("seed")},
        "git_hash": first["harness"].get("git_commit"), "date": _epoch(first.get("evaluated")) or first["date"],
        "model_name": model.get("id") or model["name"], "model_name_sanitized": safe_name(model["name"]),
        "system_instruction_sha": gen.get("prompt_hash"),
        "factrl": {"rows": run_rows},
    }
    for row in run_rows:
        name = row["set"]["name"]
        entry: dict[str, Any] = {"alias": name}
        for key, item in row["metrics"].items():
            entry[f"{key},none"] = item["value"]
            entry[f"{key}_stderr,none"] = "N/A" if item.get("stderr") is None else item["stderr"]
        data["results"][name] = entry
        data["versions"][name] = row["set"].get("version")
        data["n-shot"][name] = 0
        data["higher_is_better"][name] = {k: v["higher_is_better"] for k, v in row["metrics"].items()}
        n = max((v["n"] for v in row["metrics"].values()), default=0)
        data["n-samples"][name] = {"original": row["set"].get("count"), "effective": n}
        data["task_hashes"][name] = row["set"]["sha256"]
        data["configs"][name] = {"task": name, "tag": row["set"]["task"], "dataset_path": row["set"].get("source"),
                                 "version": row["set"].get("version"), "scorer": row["scorer"],
                                 "generation_kwargs": row["generation"].get("decoding")}
    return data


def rows_from_results(data: Any, source: str, version: str | None = None) -> list[dict]:
    """Rows of a results file, checked; `version` re-files them under another leaderboard
    version (their frozen fields are then checked against that version when stored)."""
    found = schema.errors(data, schema.RESULTS_SCHEMA)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        hint = ("; it is not a factrl results file (lm-evaluation-harness output lacks the provenance a row needs: "
                "export one with `harness leaderboard export`)" if "factrl" not in (data or {}) else "")
        raise DataError(f"{source}: {found[0]}{more}{hint}")
    rows = [dict(r) for r in data["factrl"]["rows"]]
    if len({r["run"]["run_id"] for r in rows}) != 1:
        raise DataError(f"{source}: factrl.rows mixes runs; a results file holds one run.")
    for row in rows:
        name = row["set"]["name"]
        entry = data["results"].get(name)
        if entry is None:
            raise DataError(f"{source}: results.{name} is missing though factrl.rows has it; the file was edited.")
        for key, item in row["metrics"].items():
            shown = entry.get(f"{key},none")
            if not isinstance(shown, (int, float)) or not math.isclose(shown, item["value"], rel_tol=0, abs_tol=1e-12):
                raise DataError(f"{source}: results.{name}.\"{key},none\" = {shown!r} but factrl.rows says "
                                f"{item['value']!r}; the file was edited. Re-export it.")
        if data["task_hashes"].get(name) != row["set"]["sha256"]:
            raise DataError(f"{source}: task_hashes.{name} disagrees with factrl.rows; the file was edited.")
        if version is not None and version != row["leaderboard_version"]:
            row["leaderboard_version"] = version
            row["row_id"] = rowlib.row_id(row["run"]["run_id"], name, version)
        row["source"] = f"import:{source}" + (f" ({row['source']})" if row.get("source") else "")
    return rows
