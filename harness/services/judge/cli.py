"""`harness judge`: start, check or ask the configured judge (the root config's `judge` group).

    harness judge serve                                   # the embedded judge, until Ctrl-C
    harness judge serve judge.model=tiny-llama
    harness judge check judge=openai judge.base_url=http://127.0.0.1:8000/v1 judge.model=M
    harness judge ask simpleqa_grade '{"question": "Capital of France?", "gold": "Paris", "answer": "Paris"}'
    harness judge ask atomic_facts '{"text": "Paris is in France."}' judge.cache=null
    harness judge ask simpleqa_grade '{"question": "q", "gold": "Paris", "answer": "Paris"}' judge=reference
    harness judge ask factrl.methods.rlfh.prompts:VERIFY '{...}' judge=reference   # any JudgePrompt by module:NAME

Trailing `key=value` words are config overrides, as for `harness run`.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time

from ...core.errors import HarnessError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness judge", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start the judge (judge=embedded: transformers serve) and wait for Ctrl-C")
    serve.add_argument("overrides", nargs="*", help="config overrides, e.g. judge.model=tiny-llama")
    check = sub.add_parser("check", help="preflight: the server answers and knows judge.model")
    check.add_argument("overrides", nargs="*", help="config overrides, e.g. judge=openai judge.base_url=URL")
    ask = sub.add_parser("ask", help="ask one item with a shared prompt and print the result as JSON")
    ask.add_argument("prompt", help="simpleqa_grade | atomic_facts | module:NAME of any JudgePrompt")
    ask.add_argument("item", help="the item as a JSON object, e.g. '{\"text\": \"...\"}'")
    ask.add_argument("overrides", nargs="*", help="config overrides")
    return parser


def _judge_cfg(overrides: list[str]):
    from ...engine.config import compose

    return compose(overrides).judge


def _prompt(spec: str):
    """A shared prompt by name, or any JudgePrompt as `module:NAME` (a method's or an evaluation's)."""
    from . import PROMPTS, JudgePrompt

    if spec in PROMPTS:
        return PROMPTS[spec]
    module, _, name = spec.partition(":")
    if name:
        import importlib

        try:
            found = getattr(importlib.import_module(module), name, None)
        except ImportError as err:
            raise HarnessError(f"judge prompt {spec!r}: cannot import {module} ({err}).") from None
        if isinstance(found, JudgePrompt):
            return found
    raise HarnessError(f"unknown judge prompt {spec!r}; valid: {', '.join(PROMPTS)}, or module:NAME of a JudgePrompt "
                       f"(e.g. factrl.methods.rlfh.prompts:VERIFY).")


def main(argv: list[str]) -> int:
    from . import open_judge

    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if args.command == "ask":
        prompt = _prompt(args.prompt)
        try:
            item = json.loads(args.item)
        except ValueError as err:
            raise HarnessError(f"the item is not JSON ({err.msg}); quote it: '{{\"text\": \"...\"}}'.") from None
        if not isinstance(item, dict):
            raise HarnessError("the item must be a JSON object, e.g. '{\"text\": \"...\"}'.")
        try:  # a \udcxx escape decodes to a lone surrogate, which no UTF-8 cache key can hold
            json.dumps(item, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise HarnessError("the item holds a lone surrogate (a \\udXXX escape), not text; pass UTF-8 "
                               "text.") from None
    cfg = _judge_cfg(args.overrides)
    if args.command == "serve" and str(cfg.get("backend")) == "reference":
        raise HarnessError("judge=reference answers in-process: there is no server to start; use judge=embedded.")
    with open_judge(cfg) as judge:
        if args.command == "check":
            print(f"judge ok: {judge.served_model} at {judge.display_url}")
        elif args.command == "ask":
            try:
                result = judge.ask(prompt, item)
            except KeyError as err:
                raise HarnessError(f"{err.args[0]}; add it to the item.") from None
            print(json.dumps({"ok": result.ok, "value": result.value, "error": result.error, "cached": result.cached,
                              "attempts": result.attempts, "reasks": result.reasks}, ensure_ascii=False))
        else:
            print(f"judge serving {judge.served_model} at {judge.display_url} (Ctrl-C stops it)", flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                print("judge stopped", file=sys.stderr)
    return 0
