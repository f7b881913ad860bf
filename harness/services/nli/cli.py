"""`harness nli score PREMISE HYPOTHESIS`: score one pair with any backend and print JSON."""
from __future__ import annotations

import argparse
import json
import sys

from ...core.registry import names
from .config import DEFAULT_BACKEND


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness nli", description="Score (premise, hypothesis) pairs with an "
                                     "NLI backend; prints {score, nli: describe()} as JSON.")
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score", help="probability that PREMISE supports HYPOTHESIS")
    score.add_argument("premise")
    score.add_argument("hypothesis")
    score.add_argument("--backend", choices=names("nli"), default=DEFAULT_BACKEND)
    score.add_argument("--model", help="hub id (read from the local cache) or local directory")
    score.add_argument("--revision", help="hub commit (default: the pinned one for the default ids)")
    score.add_argument("--foundation", help="hhem: local directory with flan-t5-base's config and tokenizer")
    score.add_argument("--code", choices=("harness", "remote"), help="hhem: our class or the checkpoint's code")
    score.add_argument("--device", help="auto (default), cpu, cuda or cuda:N")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .loader import load_nli

    options = {"backend": args.backend, "model": args.model, "revision": args.revision,
               "foundation": args.foundation, "code": args.code, "device": args.device}
    scorer = load_nli({key: value for key, value in options.items() if value is not None})
    [value] = scorer.score([(args.premise, args.hypothesis)])
    json.dump({"score": value, "nli": scorer.describe()}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0
