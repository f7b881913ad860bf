"""A bundle's manifest (manifest.json), its install list (requirements.txt) and its size report.

manifest.json: the target, what it has, and one entry per file carried (wheel or converted model
folder: name, version, bytes, sha256, why) and per thing left out (name, bytes if known, why).
requirements.txt: NAME==VERSION of every wheel, for
`pip install --no-index --no-deps --find-links DIR --target T -r DIR/requirements.txt`.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from packaging.utils import parse_wheel_filename

from ...core.hashing import sha256_file

MIB = 1024 * 1024
INSTALL = ("python3 -m pip install --no-index --no-deps --find-links {dir} --target {target} "
           "-r {dir}/requirements.txt")


@dataclass
class Entry:
    file: str  # relative to the bundle folder
    name: str
    version: str
    bytes: int
    sha256: str
    why: str
    kind: str  # wheel | model-cache


@dataclass
class LeftOut:
    name: str
    why: str
    bytes: int | None = None


def wheel_entry(path: Path, why: str, root: Path) -> Entry:
    name, version, _, _ = parse_wheel_filename(path.name)
    return Entry(str(path.relative_to(root)), str(name), str(version), path.stat().st_size, sha256_file(path), why,
                 "wheel")


def folder_entry(path: Path, name: str, version: str, why: str, root: Path) -> Entry:
    """A folder carried as is (a converted model): its bytes, and a sha256 over its files' names and hashes."""
    digest, size = hashlib.sha256(), 0
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        size += file.stat().st_size
        digest.update(f"{file.relative_to(path)}\0{sha256_file(file)}\n".encode())
    return Entry(str(path.relative_to(root)), name, version, size, digest.hexdigest(), why, "model-cache")


def write(root: Path, target: dict[str, Any], entries: list[Entry], left_out: list[LeftOut],
          notes: list[str], budget_mb: float, tree_bytes: int | None) -> dict[str, Any]:
    from ...core.rundir import atomic_write

    total = sum(e.bytes for e in entries)
    manifest = {
        "target": target,
        "install": INSTALL.format(dir="DIR", target="TARGET"),
        "total_bytes": total,
        "budget_mb": budget_mb,
        "working_tree_bytes": tree_bytes,
        "entries": [asdict(e) for e in entries],
        "left_out": [asdict(x) for x in left_out],
        "notes": notes,
    }
    atomic_write(root / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    pins = [f"{e.name}=={e.version}" for e in entries if e.kind == "wheel"]
    atomic_write(root / "requirements.txt", "\n".join(pins) + "\n")
    return manifest


def report(manifest: dict[str, Any], out: Path) -> str:
    """The size report: one line per entry, biggest first, then the total against the budget."""
    entries = sorted(manifest["entries"], key=lambda e: -e["bytes"])
    width = max([len(f"{e['name']} {e['version']}") for e in entries] + [10])
    target = manifest["target"]
    lines = [f"harness bundle: {len(entries)} files for CPython {target['python']} on {target['platform']} in {out}",
             f"  {'MiB':>7}  {'package':<{width}}  why"]
    for e in entries:
        lines.append(f"  {e['bytes'] / MIB:7.2f}  {e['name'] + ' ' + e['version']:<{width}}  {e['why']}")
    for x in manifest["left_out"]:
        size = f"{x['bytes'] / MIB:.1f} MiB, " if x.get("bytes") else ""
        lines.append(f"  left out: {x['name']} ({size}{x['why']})")
    for note in manifest["notes"]:
        lines.append(f"  note: {note}")
    total = manifest["total_bytes"] / MIB
    wheels = sum(e["bytes"] for e in entries if e["kind"] == "wheel") / MIB
    line = f"total {total:.1f} MiB (wheels {wheels:.1f}, converted models {total - wheels:.1f})"
    budget = manifest["budget_mb"]
    if budget:
        tree = manifest.get("working_tree_bytes")
        travels = total + (tree / MIB if tree else 0.0)
        with_tree = f" + working tree {tree / MIB:.1f} MiB = {travels:.1f} MiB" if tree else ""
        verdict = "fits" if travels <= budget else f"OVER by {travels - budget:.1f} MiB"
        line += f"{with_tree} against the {budget:g} MiB budget: {verdict}"
    lines.append(line)
    lines.append("install on the target: " + INSTALL.format(dir=out, target="TARGET") + "; then PYTHONPATH=TARGET")
    return "\n".join(lines)
