"""Building a bundle: plan the requirements, resolve, pick, download, build, add assets, write.

The bundle is assembled in `<out>.partial` beside the output folder and renamed into place at the
end, so a killed run leaves the previous bundle (or none) and a rerun starts over (pip's own
cache makes the downloads of a rerun local).
"""
from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from ...core.errors import HarnessError
from . import manifest as mf
from . import stubs
from .options import Options
from .pip import Conflict, NoWheel, Pip, requirement_name, target_interpreter
from .project import Project, build_wheels, tree_bytes
from .select import Node, nodes_from_report, target_environment, walk

MAX_ROUNDS = 10


def plan(project: Project, opts: Options) -> tuple[list[tuple[Requirement, str]], list[str], dict[str, str],
                                                   list[mf.LeftOut], list[str]]:
    """(walk roots, pip constraints, stub versions, left out, notes): the project's requirements with
    what the target has taken out, each such package at the target's version (a stub, stubs.py)."""
    roots: list[tuple[Requirement, str]] = []
    left_out: list[mf.LeftOut] = []
    notes: list[str] = []
    constraints: list[str] = []
    stub_versions = {name: v for name, v in opts.have.items() if v}
    for req, why in project.roots(opts.extras):
        name = canonicalize_name(req.name)
        if name in opts.without:
            left_out.append(mf.LeftOut(str(req), f"--without; {why}"))
            continue
        if name in opts.have:
            version = opts.have[name]
            if version and req.specifier and not req.specifier.contains(Version(version).public, prereleases=True):
                notes.append(f"the target's {name} {version} is outside the project's {req.name}{req.specifier}: "
                             f"the target's is kept and the bundle is resolved against it")
            if version is None:  # a bare --have: a version the project accepts
                pinned = stubs.pinned_version(req)
                if pinned is not None:
                    stub_versions[name] = pinned
                elif req.specifier:
                    constraints.append(f"{name}{req.specifier}")
            if req.extras:  # the target's copy may lack the extra's own requirements
                marker = f"; {req.marker}" if req.marker else ""
                req = Requirement(f"{req.name}[{','.join(sorted(req.extras))}]{marker}")
                roots.append((req, f"{why}, extras of the target's {name}"))
            continue
        roots.append((req, why))
    return roots, constraints, stub_versions, left_out, notes


def _resolve(pip: Pip, roots: list[tuple[Requirement, str]], constraints: list[str], have_stubs: stubs.Stubs,
             staging: Path, built: dict[str, Path]) -> dict[str, Any]:
    """pip's report. A requirement with no wheel on the index is built here from its sdist when it
    is pure Python; a stub found lacking an extra gets the real package's extras; each time the
    resolution runs again."""
    lines = [str(req) for req, _ in roots]
    if not lines:
        return {"install": []}
    for _ in range(MAX_ROUNDS):
        try:
            report, output = pip.resolve(lines, constraints + have_stubs.constraints(), [have_stubs.folder, staging])
        except NoWheel as err:
            _build_from_sdist(pip, err.requirement, str(err), staging, built)
            continue
        except Conflict as err:
            if not _build_missing(pip, err, set(have_stubs.versions), staging, built):
                raise
            continue
        lacking = {name: extras for name, extras in stubs.missing_extras(output, set(have_stubs.versions)).items()
                   if not extras <= set(have_stubs.extras.get(name, {}))}
        if not lacking:
            return report
        for name in lacking:
            public = have_stubs.versions[name].split("+")[0]
            with tempfile.TemporaryDirectory(prefix="harness-bundle-meta-") as tmp:
                wheel = pip.download_one(f"{name}=={public}", Path(tmp))
                have_stubs.add_extras(name, stubs.wheel_extras(wheel))
    raise HarnessError(f"resolving the project's requirements: no resolution after {MAX_ROUNDS} rounds")


def _build_from_sdist(pip: Pip, requirement: str, why: str, staging: Path, built: dict[str, Path]) -> None:
    name = requirement_name(requirement)
    if name in built:
        raise HarnessError(why)
    try:
        built[name] = pip.build_pure_wheel(requirement, staging)
    except NoWheel:
        raise HarnessError(f"{why}, nor an sdist to build one from") from None
    except HarnessError as err:
        if "compiled wheel" in str(err):
            raise
        short = requirement.split(";", 1)[0].strip()
        raise HarnessError(f"{short} has no wheel for the target in the index, and building one here from its sdist "
                           f"failed ({str(err).split(': ', 1)[-1]}): build its wheel on a machine like the target and "
                           f"pass the folder with --find-links, or leave out what needs it with --without NAME") from None


def _build_missing(pip: Pip, conflict: Conflict, have: set[str], staging: Path, built: dict[str, Path]) -> bool:
    """Whether a requirement of pip's conflict account has no wheel at all (then built here, True),
    rather than a real conflict (False). pip reports a missing wheel as a conflict when it could
    backtrack over several versions of the package that needs it (hydra-core over antlr4)."""
    found = False
    for requirement in dict.fromkeys(conflict.depends):
        name = requirement_name(requirement)
        if name in have or name in built:
            continue
        with tempfile.TemporaryDirectory(prefix="harness-bundle-probe-") as tmp:
            try:
                pip.download_one(requirement, Path(tmp))
            except NoWheel as err:
                _build_from_sdist(pip, requirement, str(err), staging, built)
                found = True
    return found


def _gguf_sha256(wheel: Path, member: str) -> str | None:
    with zipfile.ZipFile(wheel) as archive:
        try:
            info = archive.getinfo(member)
        except KeyError:
            return None
        digest = hashlib.sha256()
        with archive.open(info) as handle:
            for chunk in iter(lambda: handle.read(1 << 22), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _model_caches(asset_wheels: dict[str, Path], staging: Path, opts: Options
                  ) -> tuple[list[mf.Entry], list[mf.LeftOut]]:
    """The converted embedded models of the carried asset wheels (harness/services/models), copied from this
    machine's harness cache (converted here first where missing), so the target skips the conversion."""
    from ...services.models import loader as models  # the embedded assets' keys and conversion

    entries, left_out = [], []
    for model_name, asset in models.EMBEDDED.items():
        dist, _, _ = asset["pip"].partition("==")
        wheel = asset_wheels.get(canonicalize_name(dist))
        if wheel is None:
            continue
        version = str(parse_wheel_filename(wheel.name)[1])
        if models._package_version(asset) != version:
            left_out.append(mf.LeftOut(f"converted {model_name}", f"this machine has {dist} "
                                       f"{models._package_version(asset)}, the bundle {version}: converted on the target"))
            continue
        sha = _gguf_sha256(wheel, f"{asset['package']}/{asset['gguf']}")
        if sha is None:
            left_out.append(mf.LeftOut(f"converted {model_name}", f"{wheel.name} has no {asset['gguf']}"))
            continue
        folder = models.cache_dir() / "models" / f"{model_name}-{models._asset_key(asset, sha)}"
        if not (folder / "harness_model.json").is_file():
            print(f"harness bundle: converting {model_name} here (once) to carry it converted", file=sys.stderr)
            converted, _ = models._convert_embedded(model_name)
            if converted != folder:
                left_out.append(mf.LeftOut(f"converted {model_name}", "the installed asset differs from the bundled one"))
                continue
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        if size > opts.max_asset_mb * mf.MIB:
            left_out.append(mf.LeftOut(f"converted {model_name}", f"over --max-asset-mb {opts.max_asset_mb:g}: "
                                       f"the target converts it on first use", size))
            continue
        dest = staging / "cache" / "models" / folder.name
        shutil.copytree(folder, dest)
        entries.append(mf.folder_entry(dest, f"converted {model_name}", version,
                                       f"embedded model {model_name} converted to safetensors (tokenizer included); "
                                       f"copy into the harness cache's models/ to skip the conversion", staging))
    return entries, left_out


def _assets(project: Project, opts: Options, pip: Pip, staging: Path
            ) -> tuple[list[mf.Entry], list[mf.LeftOut], dict[str, Path]]:
    from ...core import demo_data
    from ...services import models

    why_of = {canonicalize_name(a["pip"].partition("==")[0]): f"embedded model {n} (harness/services/models)"
              for n, a in models.EMBEDDED.items()}
    why_of[canonicalize_name(demo_data.PIP.partition("==")[0])] = "the demo questions (eval=demo, pool=demo)"
    entries, left_out, wheels = [], [], {}
    for spec in project.assets:
        name = canonicalize_name(spec.partition("==")[0])
        if opts.assets is not None and name not in opts.assets:
            left_out.append(mf.LeftOut(spec, "not in --assets"))
            continue
        try:
            wheel = pip.download_one(spec, staging)
        except NoWheel:
            wheel = pip.build_pure_wheel(spec, staging)
        size = wheel.stat().st_size
        if size > opts.max_asset_mb * mf.MIB:
            wheel.unlink()
            left_out.append(mf.LeftOut(spec, f"{why_of.get(name, 'demo asset')}; over --max-asset-mb "
                                       f"{opts.max_asset_mb:g}", size))
            continue
        wheels[name] = wheel
        entries.append(mf.wheel_entry(wheel, why_of.get(name, "demo or test asset (the Makefile's ASSETS)"), staging))
    return entries, left_out, wheels


def build(project: Project, opts: Options) -> dict[str, Any]:
    out = opts.out.resolve()
    staging = out.parent / f".{out.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        return _build(project, opts, out, staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _build(project: Project, opts: Options, out: Path, staging: Path) -> dict[str, Any]:
    interpreter = target_interpreter(opts.python)
    pip = Pip(opts, interpreter)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    roots, constraints, stub_versions, left_out, notes = plan(project, opts)
    if interpreter is None and here != opts.python:
        notes.append(f"pip evaluated markers for Python {here} (no python{opts.python} on PATH); the walk checks "
                     f"them for {opts.python}")
    built: dict[str, Path] = {}
    have_stubs = stubs.Stubs(stub_versions)
    try:
        report = _resolve(pip, roots, constraints, have_stubs, staging, built)
    finally:
        have_stubs.close()
    nodes = {name: Node(n.name, n.version.removesuffix(f"+{stubs.LABEL}"), n.requires)
             for name, n in nodes_from_report(report).items()}
    picked = walk(roots, nodes, set(opts.have), target_environment(opts.python, opts.platform))
    pins = [f"{p.name}=={p.version}" for p in picked.values() if p.name not in built]
    pip.download(pins, staging)
    by_name = {canonicalize_name(parse_wheel_filename(w.name)[0]): w for w in staging.glob("*.whl")}
    entries = []
    for p in picked.values():
        wheel = by_name.get(p.name)
        if wheel is None:
            raise HarnessError(f"downloading {p.name}=={p.version}: no wheel of it arrived in {staging}")
        why = p.why + ("; built here from its sdist (pure Python, no wheel on the index)" if p.name in built else "")
        entries.append(mf.wheel_entry(wheel, why, staging))
    for wheel in build_wheels(project, staging, pip.run):
        name = str(parse_wheel_filename(wheel.name)[0])
        why = "the project" if canonicalize_name(name) == canonicalize_name(project.name) else "a plugin (Makefile PLUGINS)"
        entries.append(mf.wheel_entry(wheel, why, staging))
    asset_entries, asset_left, asset_wheels = _assets(project, opts, pip, staging)
    entries += asset_entries
    left_out += asset_left
    if opts.cache:
        cache_entries, cache_left = _model_caches(asset_wheels, staging, opts)
        entries += cache_entries
        left_out += cache_left
    target = {"python": opts.python, "platform": opts.platform, "implementation": "cp",
              "have": {k: v for k, v in sorted(opts.have.items())}, "extras": opts.extras,
              "without": sorted(opts.without), "pip_markers_python": interpreter and opts.python or here}
    manifest = mf.write(staging, target, entries, left_out, notes, opts.budget_mb, tree_bytes(project.root))
    if out.exists():
        shutil.rmtree(out)
    staging.rename(out)
    return manifest
