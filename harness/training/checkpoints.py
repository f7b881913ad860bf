"""Checkpoints that are whole or absent: staged, sealed with a manifest, renamed into place.

A kill at any moment of a save must never block the resume (nor resume from half a state).
The trainer writes every part of checkpoint N (TRL's files: adapter, optimizer, scheduler, RNG
and trainer state; then the harness's: the PPO critic, the policy's adapter copies) into
`tmp-checkpoint-N/checkpoint-N/`, then `seal` writes `harness_checkpoint.json` (every file and
its size, and the parts the method needs), fsyncs the files and folders and renames the folder
to `checkpoint-N/`. The rename is the commit point: before it there is no checkpoint N.

On resume, `resume_point` takes the newest complete checkpoint. Complete means: a manifest
whose files are all present with their sizes, and every part the method requires now (a
checkpoint written by an older harness, without a manifest, is judged by the parts alone). It
says in one line which newer folders it skipped and removes them, with any staging folder a kill
left behind, so a later save of the same step starts clean.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path
from typing import Iterable

log = logging.getLogger(__name__)

PREFIX = "checkpoint"
STAGING_PREFIX = f"tmp-{PREFIX}"
MANIFEST = "harness_checkpoint.json"
FORMAT = 1
_NAME = re.compile(rf"^{PREFIX}-(\d+)$")


def staging_root(output_dir: str | Path, step: int) -> Path:
    """The folder the trainer writes checkpoint `step` under (its `checkpoint-<step>/` child)."""
    return Path(output_dir) / f"{STAGING_PREFIX}-{int(step)}"


def _fsync(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _files(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


def seal(folder: Path, final: Path, required: Iterable[str]) -> Path:
    """Manifest, fsync and rename the staged checkpoint `folder` to `final`; returns `final`.

    Raises when a required part is missing from the staged folder: a save that lost a part is a
    bug to report, not a checkpoint to publish."""
    folder, final = Path(folder), Path(final)
    required = sorted(set(required))
    files = _files(folder)
    missing = [part for part in required if part not in files]
    if missing:
        raise RuntimeError(f"checkpoint {final.name}: the save wrote no {', '.join(missing)}")
    manifest = folder / MANIFEST
    manifest.write_text(json.dumps({"format": FORMAT, "files": files, "required": required}, indent=1) + "\n",
                        encoding="utf-8")
    for name in files:
        _fsync(folder / name)
    _fsync(manifest)
    for sub in sorted({p for p in folder.rglob("*") if p.is_dir()} | {folder}, key=lambda p: -len(p.parts)):
        _fsync(sub, directory=True)
    if final.exists():  # an incomplete folder of the same step (older harness): out of the way first
        _remove(final)
    os.rename(folder, final)
    _fsync(final.parent, directory=True)
    try:
        folder.parent.rmdir()  # the empty staging root; a kill here leaves it for `resume_point`
    except OSError:
        pass
    return final


def problems(folder: Path, required: Iterable[str]) -> list[str]:
    """Why checkpoint `folder` cannot be resumed ([] when it is complete), at most 4 reasons."""
    folder = Path(folder)
    found = _files(folder) if folder.is_dir() else {}
    listed: dict = {}
    issues: list[str] = []
    if (folder / MANIFEST).is_file():
        try:
            listed = dict(json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["files"])
        except (ValueError, KeyError, TypeError, AttributeError):
            issues.append(f"unreadable {MANIFEST}")
    names = sorted(set(required) | {name for name, size in listed.items() if found.get(name) != size})
    for name in names:
        if name not in found:
            issues.append(f"no {name}")
        elif name in listed and found[name] != listed[name]:
            issues.append(f"{name} cut short ({found[name]} of {listed[name]} bytes)")
    return issues[:4]


def _remove(path: Path) -> None:
    """Rename first, then delete: a kill during the delete leaves a `tmp-` folder, never a
    half-deleted `checkpoint-N/` that would look like a checkpoint."""
    doomed = path.with_name(f"{STAGING_PREFIX}-removed-{path.name}")
    if doomed.exists():
        shutil.rmtree(doomed, ignore_errors=True)
    os.rename(path, doomed)
    shutil.rmtree(doomed, ignore_errors=True)


def _numbered(output_dir: Path) -> list[tuple[int, Path]]:
    found = []
    for child in output_dir.iterdir() if output_dir.is_dir() else ():
        match = _NAME.match(child.name)
        if match and child.is_dir():
            found.append((int(match.group(1)), child))
    return sorted(found)


def resume_point(output_dir: str | Path, required: Iterable[str], *, clean: bool = True) -> str | None:
    """The newest complete `checkpoint-N/` under `output_dir` (None: start from step 0).

    With `clean` (the process that writes the run directory), staging folders and the newer,
    incomplete checkpoints are removed, and one line names what was skipped and why."""
    output_dir, required = Path(output_dir), list(required)
    chosen, skipped = None, []
    for step, folder in reversed(_numbered(output_dir)):
        issues = problems(folder, required)
        if not issues:
            chosen = folder
            break
        skipped.append((folder, issues))
    if clean:
        stale = [p for p in output_dir.glob(f"{STAGING_PREFIX}-*")] if output_dir.is_dir() else []
        for folder in stale:
            shutil.rmtree(folder, ignore_errors=True)
        for folder, _ in skipped:
            _remove(folder)
        if skipped:
            reasons = "; ".join(f"{f.name} ({', '.join(i)})" for f, i in skipped)
            start = f"resuming from {chosen.name}" if chosen else "no complete checkpoint left: training from step 0"
            log.warning("skipped incomplete checkpoint(s) %s, removed; %s", reasons, start)
    return str(chosen) if chosen else None


def rotate(output_dir: str | Path, limit: int | None) -> None:
    """Keep the newest `limit` complete checkpoints (transformers' save_total_limit), by step."""
    if not limit or limit <= 0:
        return
    numbered = _numbered(Path(output_dir))
    for _, folder in numbered[:-int(limit)]:
        _remove(folder)
