"""The embedded demo questions: single-hop Wikipedia QA pairs from the fanoutqa package.

FanOutQA's dev file decomposes 310 multi-hop questions into single-hop ones, each with a
Wikipedia evidence title. We keep the pairs whose answer is a short string, drop repeated
questions, and split them deterministically (by a hash of the question) into a training
pool and a held-out evaluation set, so `pool=demo` and `eval=demo` never share a question.
Data: CC BY-SA 4.0 (FanOutQA). Read by path: importing `fanoutqa` needs extra packages.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
from functools import lru_cache
from pathlib import Path

from .errors import DataError


DEMO_VERSION = "1"
PACKAGE, PIP = "fanoutqa", "fanoutqa==1.1.1"
MAX_ANSWER_WORDS = 6
EVAL_SHARE = 5  # one question in five is held out for evaluation


def demo_file() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise DataError(f"the demo questions need `{PIP}`; install it with `pip install --no-deps {PIP}`.")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "fanout-final-dev.json"
    if not path.is_file():
        raise DataError(f"{path} is missing; reinstall `{PIP}`.")
    return path


def _leaves(node: dict):
    for child in node.get("decomposition") or []:
        if child.get("decomposition"):
            yield from _leaves(child)
        else:
            yield child


@lru_cache(maxsize=1)
def demo_pairs() -> tuple[dict, ...]:
    """All kept single-hop pairs: id, question, answer, aliases, title."""
    seen: set[str] = set()
    rows = []
    for top in json.loads(demo_file().read_text(encoding="utf-8")):
        for leaf in _leaves(top):
            question, answer = str(leaf.get("question", "")).strip(), leaf.get("answer")
            if not isinstance(answer, str) or not answer.strip() or len(answer.split()) > MAX_ANSWER_WORDS:
                continue
            key = question.lower()
            if not question or key in seen:
                continue
            seen.add(key)
            title = (leaf.get("evidence") or {}).get("title", "")
            rows.append({"id": leaf["id"], "question": question, "answer": answer.strip(),
                         "aliases": [answer.strip()], "title": title})
    return tuple(rows)


def _held_out(question: str) -> bool:
    return int(hashlib.sha1(question.lower().encode()).hexdigest(), 16) % EVAL_SHARE == 0


def demo_pool() -> list[dict]:
    """Training rows in the pool format (question, answers, title)."""
    return [{"id": r["id"], "question": r["question"], "answers": [r["answer"]], "title": r["title"]}
            for r in demo_pairs() if not _held_out(r["question"])]


def demo_eval() -> list[dict]:
    """Evaluation rows in the shared benchmark format (question, answer, aliases)."""
    return [dict(r) for r in demo_pairs() if _held_out(r["question"])]
