"""`harness` command: a thin dispatcher to each sub-command's own module.

Sub-commands are registered lazily as "module:function" strings so `harness methods` does
not import torch. Every entry takes the remaining argv and returns an exit status.
"""
from __future__ import annotations

import importlib
import os
import sys

from ..core.errors import HarnessError, closest


COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("factrl.harness.engine.run.cli:main", "train a method, evaluate it and record the run (Hydra overrides; -m sweeps)"),
    "eval": ("factrl.evals.cli:eval_main", "generate and score answers for an evaluation set (Hydra overrides)"),
    "score": ("factrl.evals.cli:score_main", "score a predictions JSONL file without regenerating"),
    "methods": ("factrl.harness.engine.methods_cli:methods_main", "list the registered reward methods"),
    "sets": ("factrl.harness.core.registry.cli:sets_main", "list the registered evaluation sets and tasks (plugins included)"),
    "names": ("factrl.harness.core.registry.cli:names_main", "list the registered names of one kind (scorers, nli, judge, ...)"),
    "index": ("factrl.harness.services.corpus.cli:main", "build or query an infini-gram corpus index (build | query)"),
    "pool": ("factrl.harness.pool.cli:main", "prepare the training question pool (filter)"),
    "evidence": ("factrl.harness.services.evidence.cli:main", "build or query a Wikipedia evidence store (build | query)"),
    "leaderboard": ("factrl.leaderboard.cli:main", "add results, list or publish the leaderboard"),
    "judge": ("factrl.harness.services.judge.cli:main", "start, check or ask the LLM judge (serve | check | ask)"),
    "nli": ("factrl.harness.services.nli.cli:main", "score a (premise, hypothesis) pair with an NLI backend (score)"),
    "probe": ("factrl.harness.probe.cli:main", "score constructed gaming completions through methods' real rewards"),
    "grid": ("factrl.harness.engine.grid.cli:main", "launch a comparison grid (models x methods x seeds), skipping finished cells"),
    "bundle": ("factrl.harness.engine.bundle.cli:main", "gather the wheels a machine without a package index needs (--python, --platform)"),
}


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: harness <command> [args]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "Run `harness <command> --help` for a command's options."]
    return "\n".join(lines)


def _check_utf8(argv: list[str]) -> None:
    """One line for an argument that is not UTF-8 (Python hands such bytes over as lone
    surrogates, which fail much later, deep in a store or a cache key). The value is not echoed:
    it may be anything, a secret included."""
    for number, arg in enumerate(argv, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as err:
            where = f"character {err.start}"
            try:  # the bytes the shell passed, to name the first bad one
                raw = arg.encode("utf-8", "surrogateescape")
                raw.decode("utf-8")
            except UnicodeEncodeError:
                pass
            except UnicodeDecodeError as bad:
                where = f"byte {bad.start}: 0x{raw[bad.start]:02x}"
            raise HarnessError(f"command-line argument {number} is not UTF-8 text ({where}); pass UTF-8 "
                               f"text") from None


def _load(target: str):
    module_name, func_name = target.split(":")
    return getattr(importlib.import_module(module_name), func_name)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if argv[0] in ("--version", "version"):
        from .. import __version__

        print(f"factrl-harness {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        hint = closest(name, COMMANDS)
        suggestion = f" Did you mean `harness {hint}`?" if hint else ""
        print(f"harness: unknown command '{name}'.{suggestion} Valid: {', '.join(COMMANDS)}.", file=sys.stderr)
        return 2
    try:
        _check_utf8(rest)
        status = _load(COMMANDS[name][0])(rest)
    except HarnessError as err:
        if os.environ.get("HARNESS_DEBUG"):
            raise
        print(f"harness {name}: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt as err:  # Ctrl-C, or SIGTERM where the command asked for it (harness/engine/run/signals.py)
        print(f"harness {name}: interrupted; rerun the same command to resume.", file=sys.stderr)
        return int(getattr(err, "exit_code", 130))
    return int(status or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
