"""pip, run as a subprocess for another machine: resolve, download, build a pure wheel from an sdist.

Every call has pip's own connection timeout and retries (`--timeout`, `--retries`) and a wall-clock
limit of its own; a failure becomes one line saying what pip could not do: the index unreachable,
no wheel for the target, a conflict between requirements (pip's own account of it), or pip's last
error line.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from ...core.errors import HarnessError
from .options import Options, expand_platform

# A pip call's wall-clock limit: pip's own timeouts bound each connection, this bounds the whole call.
CALL_LIMIT_S = 900
_UNREACHABLE = re.compile(
    r"NewConnectionError|Failed to establish a new connection|Connection refused|Temporary failure in name "
    r"resolution|Name or service not known|Network is unreachable|ConnectTimeoutError|Read timed out|"
    r"ProxyError|SSLError|No route to host|Max retries exceeded|connection broken by")
_NO_WHEEL = re.compile(r"No matching distribution found for (.+?)\s*$", flags=re.MULTILINE)


class Conflict(HarnessError):
    """pip's ResolutionImpossible; `depends` holds the requirements its account names
    ("X 1.0 depends on Y==2.*"), one of which may be a package with no wheel at all."""

    def __init__(self, message: str, depends: list[str]):
        super().__init__(message)
        self.depends = depends


class NoWheel(HarnessError):
    """No distribution of `requirement` for the target (pip's `No matching distribution found`)."""

    def __init__(self, requirement: str, message: str):
        super().__init__(message)
        self.requirement = requirement


@dataclass
class Pip:
    options: Options
    interpreter: str | None = None  # a python of the target's version, for pip's marker evaluation
    log: list[str] = field(default_factory=list)

    def index_args(self, extra_links: list[Path] = ()) -> list[str]:
        out = ["--timeout", str(self.options.timeout_s), "--retries", str(self.options.retries)]
        if self.options.index_url:
            out += ["--index-url", self.options.index_url]
        if self.options.no_index:
            out.append("--no-index")
        for link in [*self.options.find_links, *map(str, extra_links)]:
            out += ["--find-links", link]
        return out

    def target_args(self) -> list[str]:
        out = ["--only-binary=:all:", "--implementation", "cp", "--python-version", self.options.python]
        for tag in expand_platform(self.options.platform):
            out += ["--platform", tag]
        return out

    def run(self, args: list[str], what: str, interpreter: str | None = None) -> str:
        """`python -m pip ARGS`; pip's output, or a one-line HarnessError naming `what` failed."""
        command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
        if interpreter:
            command += ["--python", interpreter]
        command += args
        self.log.append(" ".join(command))
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=CALL_LIMIT_S,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"{what}: pip did not finish in {CALL_LIMIT_S} s; the package index may be slow or "
                               f"unreachable (pip --timeout {self.options.timeout_s} s per connection)") from None
        output = (done.stdout or "") + (done.stderr or "")
        if done.returncode != 0:
            raise failure(what, output, self.options)
        return output

    def resolve(self, roots: list[str], constraints: list[str], extra_links: list[Path]) -> tuple[dict[str, Any], str]:
        """(pip's installation report, its output) for `roots` on the target: the dependency closure,
        with the metadata of each package; `extra_links` holds the stubs and the wheels built here."""
        with tempfile.TemporaryDirectory(prefix="harness-bundle-resolve-") as tmp:
            folder = Path(tmp)
            (folder / "requirements.txt").write_text("\n".join(roots) + "\n", encoding="utf-8")
            (folder / "constraints.txt").write_text("\n".join(constraints) + "\n", encoding="utf-8")
            output = self.run(["install", "--dry-run", "--ignore-installed", "--target", str(folder / "target"),
                      "--report", str(folder / "report.json"), *self.target_args(), *self.index_args(extra_links),
                      "-r", str(folder / "requirements.txt"), "-c", str(folder / "constraints.txt")],
                     "resolving the project's requirements for the target", interpreter=self.interpreter)
            return json.loads((folder / "report.json").read_text(encoding="utf-8")), output

    def download(self, pins: list[str], dest: Path) -> None:
        if pins:
            self.run(["download", "--no-deps", "-d", str(dest), *self.target_args(), *self.index_args(),
                      *pins], "downloading the wheels")

    def download_one(self, pin: str, dest: Path) -> Path:
        """One wheel for the target, into `dest`; its path."""
        before = set(dest.glob("*.whl"))
        self.download([pin], dest)
        new = sorted(set(dest.glob("*.whl")) - before)
        if not new:  # already there from an earlier call
            name = canonicalize_name(pin.partition("==")[0])
            new = [p for p in dest.glob("*.whl") if canonicalize_name(parse_wheel_filename(p.name)[0]) == name]
        if not new:
            raise HarnessError(f"downloading {pin}: pip reported success and left no wheel")
        return new[0]

    def build_pure_wheel(self, requirement: str, dest: Path) -> Path:
        """A wheel built here from the sdist of `requirement` (a package with no wheel on the index),
        accepted only when it is pure Python (`none-any`), so it installs on the target as well."""
        with tempfile.TemporaryDirectory(prefix="harness-bundle-sdist-") as tmp:
            self.run(["wheel", "--no-deps", "--no-binary", ":all:", "--no-build-isolation", "-w", tmp,
                      *self.index_args(), requirement], f"building {requirement} from its sdist")
            wheels = list(Path(tmp).glob("*.whl"))
            if len(wheels) != 1:
                raise HarnessError(f"building {requirement} from its sdist gave {len(wheels)} wheels")
            tags = parse_wheel_filename(wheels[0].name)[3]
            if not all(tag.abi == "none" and tag.platform == "any" for tag in tags):
                raise HarnessError(
                    f"{requirement} has no wheel for CPython {self.options.python} on {self.options.platform}, and "
                    f"its sdist builds a compiled wheel here ({wheels[0].name}): build it on a machine like the "
                    f"target and pass its folder with --find-links")
            target = dest / wheels[0].name
            shutil.move(str(wheels[0]), target)
            return target


def failure(what: str, output: str, options: Options) -> HarnessError:
    """One line for a failed pip call. pip's calls are not --quiet, and retry at least once: an index
    pip cannot reach shows only in its retry warnings ("connection broken by NewConnectionError")."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    unreachable = [line for line in lines if _UNREACHABLE.search(line)]
    if unreachable and not options.no_index:
        where = options.index_url or "the default index (pip's configuration)"
        reason = re.sub(r"\s+", " ", unreachable[-1])[:240]
        return HarnessError(f"{what}: the package index is unreachable ({where}; pip: {reason}); run harness "
                            f"bundle where pip reaches an index, or pass --no-index --find-links DIR with the wheels")
    if "conflicting dependencies" in output or "ResolutionImpossible" in output:
        causes = []
        if "The conflict is caused by:" in output:
            tail = output.split("The conflict is caused by:", 1)[1].splitlines()
            for line in tail:
                line = line.strip()
                if not line:
                    if causes:
                        break
                    continue
                if line.startswith(("To fix", "ERROR")):
                    break
                causes.append(line)
        detail = "; ".join(causes).replace("+have", " (the target's)") or (lines[-1] if lines else "no detail")
        depends = [line.split(" depends on ", 1)[1].strip() for line in causes if " depends on " in line]
        return Conflict(f"{what}: the requirements conflict for this target: {detail}. Change the target's "
                        f"versions in --have, or leave a requirement out with --without NAME", depends)
    missing = _NO_WHEEL.findall(output)
    if missing:
        requirement = missing[-1].strip()
        return NoWheel(requirement, f"{what}: no wheel of {requirement} for CPython {options.python} on "
                                    f"{options.platform} (nor an older compatible platform tag) in the index")
    # "ERROR: Exception:" heads a traceback, whose last line says what went wrong.
    errors = [line for line in lines if line.startswith("ERROR") and not line.endswith("Exception:")] or lines[-1:]
    return HarnessError(f"{what}: pip failed: {errors[-1][:300] if errors else 'no output'}")


def requirement_name(text: str) -> str:
    """Canonical name of a requirement string as pip prints it (`antlr4-python3-runtime==4.9.*`)."""
    try:
        return canonicalize_name(Requirement(text).name)
    except InvalidRequirement:
        return canonicalize_name(re.split(r"[<>=!~;\[ (]", text, maxsplit=1)[0])


def target_interpreter(python: str) -> str | None:
    """A Python of the target's version on PATH (`python3.12`), so pip evaluates markers for it; None
    when this one is that version or none answers."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == python:
        return None
    candidate = shutil.which(f"python{python}")
    if candidate is None:
        return None
    try:
        done = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return candidate if done.returncode == 0 and done.stdout.strip() == python else None
