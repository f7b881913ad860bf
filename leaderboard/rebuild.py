"""`harness leaderboard rebuild RUNS_DIR... --store S`: a store rebuilt from run directories.

Why: many jobs on a shared network file system cannot share one SQLite file (its locking is
unreliable there). With `leaderboard=rundir` each job writes only its own run directory,
whose files already hold every row; this module turns a set of such directories into a store.

Deterministic: run directories are found recursively (multirun/ subfolders too; hidden folders
such as .submitit/ are skipped), read in the order of their resolved paths and stored in the
order of their row ids, never in argument or directory-listing order. A frozen field of a
version (prompt, scorer, set pin, decoding per set and model; versions.frozen_fields) is never
taken from "the first row": every row is compared first, and runs that disagree stop the
rebuild with the field, each value and the runs holding it. A row's `date` is its run's
finish time rather than the time of the rebuild, so two rebuilds publish byte-identical tables.

The store is written to a temporary file beside the target and renamed over it at the end,
so a failed rebuild leaves the old store untouched; an existing store with rows is replaced
only with `replace=True` (`--replace`).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from factrl.harness.core.errors import HarnessError

from .record import rows_from_run
from .store import Store, versions
from .store import rows as rowlib

RUN_FILE = "run.json"


@dataclass
class RebuildReport:
    """What a rebuild stored and what it left out (by path, with the reason)."""

    store: Path
    runs: list[Path] = field(default_factory=list)
    rows: int = 0
    versions: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[Path, str]] = field(default_factory=list)

    def summary(self) -> str:
        held = ", ".join(f"version {v}: {n}" for v, n in self.versions.items()) or "none"
        return (f"rebuilt {self.store} from {len(self.runs)} finished run director{'y' if len(self.runs) == 1 else 'ies'}"
                f": {self.rows} row(s) ({held}); skipped {len(self.skipped)}")


def find_run_dirs(roots: Iterable[str | os.PathLike]) -> list[Path]:
    """Every folder holding a run.json under `roots` (a root may itself be a run directory),
    sorted by resolved path; a run directory's own subfolders are not searched."""
    found: set[Path] = set()
    for root in map(Path, roots):
        if not root.is_dir():
            raise HarnessError(f"{root}: no such directory; pass run directories or folders holding them "
                               "(e.g. the runs/ folder, output_dir of `harness run`).")
        for folder, dirs, files in os.walk(root):
            if RUN_FILE in files:
                found.add(Path(folder).resolve())
                dirs[:] = []  # train/, eval/ hold no further runs
            else:
                dirs[:] = [d for d in dirs if not d.startswith(".")]  # .submitit/ logs, editor folders
    return sorted(found)


def _run_info(run_dir: Path) -> dict[str, Any] | str:
    """run.json as a mapping, or why it cannot be read."""
    try:
        info = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return f"run.json unreadable ({err})"
    return info if isinstance(info, dict) else "run.json is not a JSON object"


def collect(run_dirs: list[Path], version: str | None = None
            ) -> tuple[list[dict[str, Any]], dict[str, Path], list[tuple[Path, str]]]:
    """(rows sorted by row id, {row id: its run directory}, skipped (path, reason)) of the
    finished, valid runs among `run_dirs`."""
    rows: list[dict[str, Any]] = []
    skipped: list[tuple[Path, str]] = []
    origin: dict[str, Path] = {}
    for run_dir in sorted(run_dirs):
        info = _run_info(run_dir)
        if isinstance(info, str):
            skipped.append((run_dir, info))
            continue
        if info.get("status") != "finished":
            skipped.append((run_dir, f"unfinished (status {info.get('status')!r}); rerun its `harness run` "
                                      "command to finish it"))
            continue
        try:
            run_rows = rows_from_run(run_dir, version)
        except HarnessError as err:
            skipped.append((run_dir, str(err)))
            continue
        problems = [f"{r['set']['name']}: {p}" for r in run_rows for p in rowlib.problems(r)]
        if problems:
            skipped.append((run_dir, "; ".join(problems[:3])))
            continue
        for row in run_rows:
            # The run's own time, not the rebuild's: rows (and published tables) do not change
            # when the same runs are rebuilt again.
            row["date"] = str(info.get("finished") or info.get("started") or row.get("evaluated") or "")
            if row["row_id"] in origin:
                raise HarnessError(f"run {row['run']['run_id']} appears twice: {origin[row['row_id']]} and "
                                   f"{run_dir}; keep one copy (move the other out of the folders passed).")
            origin[row["row_id"]] = run_dir
        rows += run_rows
    rows.sort(key=lambda r: r["row_id"])
    return rows, origin, skipped


def frozen_conflicts(rows: list[dict[str, Any]], sources: dict[str, Path]) -> list[str]:
    """One message per frozen field that rows of one version disagree on, naming every value
    and (up to two of) the runs that hold it; empty when all agree."""
    seen: dict[tuple[str, str], dict[str, list[Path]]] = {}
    for row in rows:
        for key, value in versions.frozen_fields(row).items():
            holders = seen.setdefault((row["leaderboard_version"], key), {})
            holders.setdefault(versions.canonical(value), []).append(sources[row["row_id"]])
    out = []
    for (version, key), values in sorted(seen.items()):
        if len(values) > 1:
            parts = [f"{value} in {', '.join(str(p) for p in sorted(set(paths))[:2])}"
                     + (f" (+{len(set(paths)) - 2} more)" if len(set(paths)) > 2 else "")
                     for value, paths in sorted(values.items())]
            out.append(f"version {version} {key}: " + " | ".join(parts))
    return out


def _discard(path: Path, *, main: bool = True) -> None:
    """Delete an SQLite file (unless main=False) and its WAL, shared-memory and journal files."""
    for suffix in ("", "-wal", "-shm", "-journal")[0 if main else 1:]:
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def rebuild(roots: Iterable[str | os.PathLike], store_path: str | os.PathLike, version: str | None = None,
            replace: bool = False) -> RebuildReport:
    """Build the store at `store_path` from the finished run directories under `roots`."""
    target = Path(store_path)
    if target.exists():
        held = Store(target).versions()  # also refuses a file that is not a leaderboard store
        if held and not replace:
            raise HarnessError(f"{target} already holds {sum(held.values())} row(s); pass --replace to rebuild it "
                               "from the run directories (its rows are discarded), or another --store.")
    roots = list(roots)
    run_dirs = find_run_dirs(roots)
    rows, sources, skipped = collect(run_dirs, version)
    if not rows:
        raise HarnessError(f"no finished run directory with valid rows under {', '.join(map(str, roots))} "
                           f"({len(run_dirs)} found, {len(skipped)} skipped); nothing to rebuild.")
    conflicts = frozen_conflicts(rows, sources)
    if conflicts:
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        raise HarnessError(f"runs disagree on a frozen field, so no order-independent store exists: {conflicts[0]}"
                           f"{more}; move the runs that differ out of the folders passed (or rebuild them into "
                           "another --store), or record them under a new leaderboard version.")
    tmp = target.with_name(f".{target.name}.rebuild-{os.getpid()}")
    _discard(tmp)
    try:
        Store(tmp).add(rows)
        # The old store's WAL / shared-memory files belong to the file being replaced and
        # would otherwise be replayed into the new one.
        _discard(target, main=False)
        os.replace(tmp, target)
    finally:
        _discard(tmp)
    report = RebuildReport(target, sorted(set(sources.values())), len(rows), skipped=skipped)
    report.versions = Store(target).versions()
    return report

