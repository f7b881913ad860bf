"""Which resolved packages a bundle carries: the dependency closure minus what the target has.

pip resolves the whole closure for the target (`pip install --dry-run --report`, harness/engine/bundle/pip.py);
this module walks that report from the project's requirements and keeps every package the walk
reaches, except those the target has (`--have`). The walk does not go through a package the target
has, since the target has its dependencies too (its `torch` comes with its `nvidia-*`, `triton`,
`sympy`), with one exception: extras. A requirement such as `transformers[serving]` asks for more
than the package itself, and the target's copy may lack the extra's dependencies, so the walk
follows the extra's own requirements (those whose marker names the extra) into the bundle.

Markers are evaluated for the target (its Python version, CPython, Linux or the platform's OS and
machine), not for the machine that builds the bundle. A requirement the walk needs that the report
does not hold (pip evaluated that marker for another Python) is an error that says so.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ...core.errors import HarnessError


@dataclass(frozen=True)
class Node:
    """One package of pip's report: canonical name, version, requirement strings (Requires-Dist)."""

    name: str
    version: str
    requires: tuple[str, ...] = ()


@dataclass
class Picked:
    """A package the bundle carries, and the first reason the walk met it."""

    name: str
    version: str
    why: str
    extras: set[str] = field(default_factory=set)


def nodes_from_report(report: dict[str, Any]) -> dict[str, Node]:
    """The install items of a pip installation report (format 1), by canonical name."""
    out: dict[str, Node] = {}
    for item in report.get("install", []):
        meta = item.get("metadata") or {}
        name = canonicalize_name(str(meta.get("name", "")))
        if not name:
            continue
        out[name] = Node(name, str(meta.get("version", "")), tuple(meta.get("requires_dist") or ()))
    return out


def target_environment(python: str, platform: str) -> dict[str, str]:
    """PEP 508 marker variables of a CPython `python` (X.Y) on a wheel `platform` tag."""
    if platform.startswith(("manylinux", "musllinux", "linux")):
        system, sys_platform, os_name = "Linux", "linux", "posix"
    elif platform.startswith("macosx"):
        system, sys_platform, os_name = "Darwin", "darwin", "posix"
    elif platform.startswith("win"):
        system, sys_platform, os_name = "Windows", "win32", "nt"
    else:
        system, sys_platform, os_name = "", "", ""
    machine = re.sub(r"^(manylinux_\d+_\d+|manylinux\d+|musllinux_\d+_\d+|macosx_\d+_\d+|linux)_", "", platform)
    machine = {"win_amd64": "AMD64", "win32": "x86", "win_arm64": "ARM64"}.get(platform, machine)
    return {
        "python_version": python, "python_full_version": f"{python}.0", "implementation_name": "cpython",
        "implementation_version": f"{python}.0", "platform_python_implementation": "CPython",
        "platform_system": system, "sys_platform": sys_platform, "os_name": os_name,
        "platform_machine": machine, "platform_release": "", "platform_version": "",
    }


def _applies(marker: Marker | None, env: dict[str, str], extras: Iterable[str]) -> bool:
    if marker is None:
        return True
    return any(marker.evaluate({**env, "extra": extra}) for extra in ("", *extras))


def _only_for_extras(req: Requirement, env: dict[str, str], extras: set[str]) -> bool:
    """True when `req` applies through one of `extras` and not to the package on its own."""
    return req.marker is not None and not _applies(req.marker, env, ()) and _applies(req.marker, env, extras)


def walk(roots: list[tuple[Requirement, str]], nodes: dict[str, Node], have: set[str],
         env: dict[str, str]) -> dict[str, Picked]:
    """The packages to carry, by canonical name, in the order the walk met them.

    roots: (requirement, why) for each requirement of the project the bundle serves.
    have: canonical names of packages the target has (never carried; walked only for extras).
    """
    picked: dict[str, Picked] = {}
    walked: dict[str, set[str]] = {}  # name -> extras already followed
    queue: list[tuple[Requirement, str]] = [(req, why) for req, why in roots if _applies(req.marker, env, ())]
    while queue:
        req, why = queue.pop(0)
        name = canonicalize_name(req.name)
        node = nodes.get(name)
        if node is None:
            if name in have:
                continue  # the target has it; pip needed no copy of it to resolve the rest
            raise HarnessError(
                f"{req} ({why}) is not in pip's resolution: pip evaluated the markers for another Python "
                f"than the target's {env['python_version']}; put a python{env['python_version']} on PATH "
                f"and bundle again")
        extras = {canonicalize_name(e) for e in req.extras}
        seen = walked.get(name)
        if seen is not None and extras <= seen:
            continue
        new_extras = extras - (seen or set())
        first_visit = seen is None
        walked[name] = (seen or set()) | extras
        if name not in have:
            if name not in picked:
                picked[name] = Picked(name, node.version, why)
            picked[name].extras |= extras
        label = f"{node.name}[{','.join(sorted(walked[name]))}]" if walked[name] else node.name
        for text in node.requires:
            try:
                child = Requirement(text)
            except InvalidRequirement as err:
                raise HarnessError(f"{node.name} {node.version} declares a requirement pip accepted and "
                                   f"packaging cannot read: {text!r} ({err})") from None
            if name in have:
                # The target's copy brings its own requirements; only an extra asked of it adds some.
                if not _only_for_extras(child, env, new_extras):
                    continue
            elif first_visit:
                if not _applies(child.marker, env, walked[name]):
                    continue
            elif not _only_for_extras(child, env, new_extras):
                continue
            queue.append((child, f"needed by {label} {node.version} ({_short(child)})"))
    return picked


def _short(req: Requirement) -> str:
    """`accelerate>=1.4.0` of a requirement, without its marker."""
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    return f"{req.name}{extras}{req.specifier}"
