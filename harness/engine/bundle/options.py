"""`harness bundle`'s options, checked before anything is downloaded: each bad one is one line.

The target is named by a Python version (`3.12`) and a wheel platform tag
(`manylinux_2_28_x86_64`); what the target already has by `--have` (NAME or NAME==VERSION, comma
separated, repeatable) and `--have-file` (the output of `python3 -m pip list --format=freeze` run
on the target, one NAME==VERSION a line).
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ...core.errors import HarnessError, did_you_mean

PLATFORM = re.compile(
    r"^(?:(?P<many>manylinux_(?P<glibc_major>\d+)_(?P<glibc_minor>\d+))|(?P<legacy>manylinux(?:2014|2010|1))"
    r"|(?P<musl>musllinux_(?P<musl_major>\d+)_(?P<musl_minor>\d+)))_(?P<arch>x86_64|aarch64|i686|ppc64le|s390x|armv7l)$"
    r"|^(?:win_amd64|win32|win_arm64|macosx_\d+_\d+_(?:x86_64|arm64|universal2))$")
LEGACY = {"manylinux2014": 17, "manylinux2010": 12, "manylinux1": 5}
NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
# The transfer limit of the GPU machines this project's GPU checks run on (docs/GPU_NODES.md):
# the working tree and the bundle together.
DEFAULT_BUDGET_MB = 64.0


@dataclass
class Options:
    python: str
    platform: str
    out: Path
    have: dict[str, str | None] = field(default_factory=dict)  # canonical name -> version or None
    extras: list[str] = field(default_factory=list)
    without: set[str] = field(default_factory=set)
    assets: list[str] | None = None  # None: all of the project's assets
    max_asset_mb: float = 16.0
    cache: bool = True
    budget_mb: float = DEFAULT_BUDGET_MB
    index_url: str | None = None
    find_links: list[str] = field(default_factory=list)
    no_index: bool = False
    timeout_s: float = 15.0
    retries: int = 2
    source: Path | None = None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, through the CLI's HarnessError path (exit 2)
        raise HarnessError(f"{message} (see `harness bundle --help`)")


def parser() -> argparse.ArgumentParser:
    from . import __doc__ as bundle_doc

    p = _Parser(prog="harness bundle", description=bundle_doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    p.add_argument("--python", default=here, help=f"the target's Python, X.Y (default: this one's, {here})")
    p.add_argument("--platform", default=None,
                   help="the target's wheel platform tag, e.g. manylinux_2_28_x86_64 (glibc 2.28 or newer on "
                        "x86-64; older manylinux tags are accepted too). Default: this machine's")
    p.add_argument("--out", required=True, type=Path, help="the bundle's folder (created; a previous bundle there is replaced)")
    p.add_argument("--have", action="append", default=[], metavar="NAME[==VERSION],...",
                   help="packages the target has (e.g. torch==2.11.0,transformers==5.17.0,peft,accelerate); a "
                        "version pins the resolution to it, a bare name takes the project's own requirement")
    p.add_argument("--have-file", type=Path, default=None,
                   help="the target's `python3 -m pip list --format=freeze` (one NAME==VERSION a line)")
    p.add_argument("--extras", action="append", default=[], metavar="EXTRA,...",
                   help="the project's optional dependency groups to carry too (pyproject.toml), e.g. gpu")
    p.add_argument("--without", action="append", default=[], metavar="NAME,...",
                   help="requirements of the project to leave out (e.g. vllm, whose wheel is too large to carry)")
    p.add_argument("--assets", default="all",
                   help="the demo asset packages to carry (the Makefile's ASSETS): all, none, or NAME,...")
    p.add_argument("--max-asset-mb", type=float, default=16.0,
                   help="leave out an asset wheel or converted model larger than this (default 16)")
    p.add_argument("--no-cache", action="store_true",
                   help="do not carry the converted embedded models (the target converts them on first use)")
    p.add_argument("--budget-mb", type=float, default=DEFAULT_BUDGET_MB,
                   help="the size the report measures the bundle and the working tree against (0: none)")
    p.add_argument("--index-url", default=None, help="pip's --index-url")
    p.add_argument("--find-links", action="append", default=[], help="pip's --find-links (repeatable)")
    p.add_argument("--no-index", action="store_true", help="pip's --no-index: only --find-links folders")
    p.add_argument("--timeout", type=float, default=15.0, help="pip's per-connection timeout in seconds (default 15)")
    p.add_argument("--retries", type=int, default=2,
                   help="pip's retries per connection (default 2; at least 1: pip names an index it cannot reach "
                        "only in its retry warnings)")
    p.add_argument("--source", type=Path, default=None,
                   help="the project checkout whose wheels are built (default: the one this harness runs from)")
    return p


def _split(values: list[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def parse_have(item: str, where: str) -> tuple[str, str | None]:
    """`torch==2.11.0+cu130` -> ("torch", "2.11.0+cu130"); `peft` -> ("peft", None)."""
    name, sep, version = item.partition("==")
    name, version = name.strip(), version.strip()
    if not NAME.match(name) or (sep and not version):
        raise HarnessError(f"{where}: '{item}' is not NAME or NAME==VERSION (e.g. torch==2.11.0)")
    if version:
        try:
            Version(version)
        except InvalidVersion:
            raise HarnessError(f"{where}: '{item}': '{version}' is not a version (e.g. torch==2.11.0)") from None
    return canonicalize_name(name), version or None


def read_have_file(path: Path) -> dict[str, str | None]:
    """A `pip list --format=freeze` / `pip freeze` file: NAME==VERSION lines; editable (-e) and
    direct-reference (NAME @ URL) lines name a package without a version; comments are skipped."""
    if not path.is_file():
        raise HarnessError(f"--have-file {path}: no such file; write it on the target with "
                           f"`python3 -m pip list --format=freeze > FILE`")
    have: dict[str, str | None] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-e ") or line.startswith("--"):
            continue
        if " @ " in line:
            line = line.split(" @ ", 1)[0].strip()
        name, version = parse_have(line, f"--have-file {path}:{number}")
        have[name] = version
    return have


def manylinux_glibc(platform: str) -> tuple[int, int] | None:
    match = PLATFORM.match(platform)
    if not match or not (match.group("many") or match.group("legacy")):
        return None
    if match.group("legacy"):
        return 2, LEGACY[match.group("legacy")]
    return int(match.group("glibc_major")), int(match.group("glibc_minor"))


def expand_platform(platform: str) -> list[str]:
    """The platform tags a target accepts, newest first: pip matches each `--platform` exactly, and a
    glibc-2.28 system also runs manylinux_2_27 ... manylinux_2_5 (and their legacy names) and
    musllinux_1_2 also musllinux_1_1."""
    match = PLATFORM.match(platform)
    if match is None or match.group("arch") is None:
        return [platform]
    arch = match.group("arch")
    if match.group("musl"):
        major, minor = int(match.group("musl_major")), int(match.group("musl_minor"))
        return [f"musllinux_{major}_{m}_{arch}" for m in range(minor, 0, -1)]
    major, minor = manylinux_glibc(platform) or (2, 5)
    tags = []
    for m in range(minor, 4, -1):
        tags.append(f"manylinux_{major}_{m}_{arch}")
        tags += [f"{legacy}_{arch}" for legacy, glibc in LEGACY.items() if glibc == m]
    return tags


def this_platform() -> str:
    """This machine's wheel platform tag: manylinux_2_<glibc minor>_<machine> on a glibc Linux (the
    newest tag its pip installs), else the first tag `packaging` gives."""
    import os
    import platform as platform_module

    if sys.platform.startswith("linux"):
        try:
            libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
        except (ValueError, OSError):
            libc = ""
        match = re.fullmatch(r"glibc (\d+)\.(\d+)", libc)
        if match:
            return f"manylinux_{match.group(1)}_{match.group(2)}_{platform_module.machine()}"
    from packaging import tags

    for tag in tags.platform_tags():
        return tag
    raise HarnessError("cannot tell this machine's wheel platform; pass --platform (e.g. manylinux_2_28_x86_64)")


def check(args: argparse.Namespace, requires_python: str | None = None, extras_known: list[str] | None = None,
          assets_known: list[str] | None = None) -> Options:
    """The parsed options, each checked; the project's facts (from its pyproject.toml and Makefile)
    are passed in so the checks need no network and no build."""
    if not re.fullmatch(r"3\.\d{1,2}", args.python):
        raise HarnessError(f"--python {args.python}: write the target's Python as X.Y, e.g. 3.12")
    if requires_python:
        from packaging.specifiers import SpecifierSet

        if not SpecifierSet(requires_python).contains(f"{args.python}.0"):
            raise HarnessError(f"--python {args.python}: the project requires Python {requires_python} "
                               f"(pyproject.toml)")
    platform = args.platform or this_platform()
    if not PLATFORM.match(platform):
        raise HarnessError(f"--platform {platform}: not a wheel platform tag; e.g. manylinux_2_28_x86_64 "
                           f"(glibc >= 2.28, x86-64), manylinux_2_17_aarch64, musllinux_1_2_x86_64")
    have: dict[str, str | None] = {}
    if args.have_file is not None:
        have.update(read_have_file(args.have_file))
    for item in _split(args.have):
        name, version = parse_have(item, "--have")
        have[name] = version
    extras = _split(args.extras)
    if extras_known is not None:
        for extra in extras:
            if extra not in extras_known:
                raise HarnessError(f"--extras {extra}: not an optional dependency group of the project"
                                   f"{did_you_mean(extra, extras_known)} Valid: {', '.join(extras_known)}.")
    assets: list[str] | None
    if args.assets.strip() == "all":
        assets = None
    elif args.assets.strip() == "none":
        assets = []
    else:
        assets = [canonicalize_name(a) for a in _split([args.assets])]
        if assets_known is not None:
            for asset in assets:
                if asset not in assets_known:
                    raise HarnessError(f"--assets {asset}: not one of the project's assets (the Makefile's "
                                       f"ASSETS){did_you_mean(asset, assets_known)} Valid: all, none, "
                                       f"{', '.join(assets_known)}.")
    for number, flag in ((args.max_asset_mb, "--max-asset-mb"), (args.budget_mb, "--budget-mb")):
        if number < 0:
            raise HarnessError(f"{flag} {number}: must be 0 or more")
    if args.timeout <= 0 or args.retries < 1:
        raise HarnessError(f"--timeout {args.timeout} / --retries {args.retries}: the timeout must be over 0 "
                           f"seconds and the retries 1 or more")
    for folder in args.find_links:
        if "://" not in folder and not Path(folder).is_dir():
            raise HarnessError(f"--find-links {folder}: no such folder")
    out = args.out
    if out.exists() and not out.is_dir():
        raise HarnessError(f"--out {out}: a file is there; pick a new folder")
    if out.is_dir() and any(out.iterdir()) and not (out / "manifest.json").is_file():
        raise HarnessError(f"--out {out}: the folder holds files and no bundle (no manifest.json); pick an "
                           f"empty or new folder")
    return Options(python=args.python, platform=platform, out=out, have=have, extras=extras,
                   without={canonicalize_name(n) for n in _split(args.without)}, assets=assets,
                   max_asset_mb=args.max_asset_mb, cache=not args.no_cache, budget_mb=args.budget_mb,
                   index_url=args.index_url, find_links=list(args.find_links), no_index=args.no_index,
                   timeout_s=args.timeout, retries=args.retries, source=args.source)
