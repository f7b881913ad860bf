"""Stand-in wheels for what the target has, so pip resolves around it without fetching it.

pip can only resolve for another platform with `--target`, which ignores what is installed; left to
itself it would fetch each package the target has, and that package's own closure (the target's
torch: a 530 MB wheel for its metadata, with this pip, and the `nvidia-*` wheels it pins). Instead,
each such package is offered to pip as a stub: a wheel of no code whose version is the target's with
the local label `+have` (`torch-2.11.0+have-py3-none-any.whl`), pinned by a constraint that no
index release matches (`torch==2.11.0+have`). A stub declares no requirements of its own (the target
has them) except its extras: where pip reports that a stub "does not provide the extra" a requirement
asks for, the package's real metadata is read once (its wheel from the index) and the stub is made
again with those extras' requirements, so pip resolves what the extra adds. Stubs never enter the
bundle: the walk (select.py) leaves out every package the target has.
"""
from __future__ import annotations

import re
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

LABEL = "have"
MISSING_EXTRA = re.compile(r"(\S+) (\S+) does not provide the extra '([^']+)'")


def stub_version(version: str) -> str:
    """`2.11.0+cu130` -> `2.11.0+have`."""
    return f"{Version(version).public}+{LABEL}"


def pinned_version(req: Requirement) -> str | None:
    """The one version a requirement pins exactly (`==2.13.0`), or None (`==0.21.*` names a series,
    whose newest release the target may not have)."""
    for spec in req.specifier:
        if spec.operator in ("==", "===") and not spec.version.endswith(".*"):
            try:
                Version(spec.version)
            except ValueError:
                return None
            return spec.version
    return None


def write_stub(folder: Path, name: str, version: str, extras: dict[str, list[str]] | None = None) -> Path:
    """A stub wheel of `name` at `version` (already `+have`) in `folder`; `extras` maps an extra to
    its requirement strings (each written with its `extra == "..."` marker)."""
    dist = re.sub(r"[-_.]+", "_", canonicalize_name(name))
    info = f"{dist}-{version}.dist-info"
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
             "Summary: stand-in for the target's own copy (harness bundle); never installed"]
    for extra, requires in sorted((extras or {}).items()):
        lines.append(f"Provides-Extra: {extra}")
        lines += [f"Requires-Dist: {text}" for text in requires]
    files = {f"{info}/METADATA": "\n".join(lines) + "\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: harness-bundle\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    for old in folder.glob(f"{dist}-*.whl"):
        old.unlink()
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
    return path


def wheel_extras(wheel: Path) -> dict[str, list[str]]:
    """A real wheel's extras: {extra: [its Requires-Dist lines, markers included]}."""
    with zipfile.ZipFile(wheel) as archive:
        member = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        meta = Parser().parsestr(archive.read(member).decode("utf-8", "replace"))
    extras: dict[str, list[str]] = {canonicalize_name(e): [] for e in meta.get_all("Provides-Extra") or []}
    for text in meta.get_all("Requires-Dist") or []:
        req = Requirement(text)
        if req.marker is None:
            continue
        for extra in extras:
            if req.marker.evaluate({"extra": extra}) and not req.marker.evaluate({"extra": ""}):
                extras[extra].append(text)
    return extras


def missing_extras(pip_output: str, have: set[str]) -> dict[str, set[str]]:
    """{have package: extras} that pip found a stub lacking (its "does not provide the extra" warnings)."""
    out: dict[str, set[str]] = {}
    for name, _, extra in MISSING_EXTRA.findall(pip_output):
        key = canonicalize_name(name)
        if key in have:
            out.setdefault(key, set()).add(canonicalize_name(extra))
    return out


class Stubs:
    """The stub folder of one bundle build: one stub per package the target has at a known version."""

    def __init__(self, versions: dict[str, str]):
        self._tmp = tempfile.TemporaryDirectory(prefix="harness-bundle-stubs-")
        self.folder = Path(self._tmp.name)
        self.versions = {name: stub_version(v) for name, v in versions.items()}
        self.extras: dict[str, dict[str, list[str]]] = {}
        for name, version in self.versions.items():
            write_stub(self.folder, name, version)

    def constraints(self) -> list[str]:
        return [f"{name}=={version}" for name, version in sorted(self.versions.items())]

    def add_extras(self, name: str, extras: dict[str, list[str]]) -> None:
        self.extras[name] = extras
        write_stub(self.folder, name, self.versions[name], extras)

    def close(self) -> None:
        self._tmp.cleanup()
