"""A scripted RLFH judge on 127.0.0.1 (real HTTP, tests/knowrl/judge_server.py underneath) that
reads the prompt it is sent the way a judge would: which of the three tasks it is (the released
prompts end with "# Statements", "# Verification", "# Evaluation") and the material blocks.

    RLFHJudge(extract={needle: reply}, verify={statement: reply}, assess={statement: reply})

extract's needle is looked for in the response block; verify's / assess's key is the statement
(the prompt's last material block). A reply may be a list (one per request, the last repeats) or
a fault ("500", "slow", "badjson"); a default may be a function of the response / statement.
`echo_all`, extract's default, echoes every sentence of the response with itself as its one
statement. Every request body is kept (`requests`), so tests see
the decoding each call carried.
"""
from __future__ import annotations

import re

from factrl.harness.services.judge.prompts import find_material
from tests.knowrl.judge_server import JudgeServer, raw_text

ECHO_ALL = "<echo every sentence>"


def kind_of(text: str) -> str:
    for kind, tail in (("extract", "# Statements"), ("verify", "# Verification"), ("assess", "# Evaluation")):
        if text.rstrip().endswith(tail):
            return kind
    return "other"


def blocks(text: str, label: str) -> list[str]:
    return [body for name, body in find_material(text) if name == label]


def echo_all(response: str) -> str:
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", response) if len(s.split()) >= 3]
    if not sentences:
        return "No statements"
    return "\n".join(f">> Sentence {n}: {s}\n* {s}" for n, s in enumerate(sentences, 1))


class RLFHJudge(JudgeServer):
    request_queue_size = 64  # room for a batch of concurrent requests (the socket's backlog)

    def __init__(self, *, extract=None, verify=None, assess=None, default_extract=ECHO_ALL,
                 default_verify="Correct", default_assess="4"):
        super().__init__(default="A")
        self.tables = {"extract": dict(extract or {}), "verify": dict(verify or {}), "assess": dict(assess or {})}
        self.defaults = {"extract": default_extract, "verify": default_verify, "assess": default_assess}

    def _pick(self, kind: str, key: str, exact: bool):
        table = self.tables[kind]
        with self.lock:
            found = table.get(key) if exact else next((r for k, r in table.items() if k in key), None)
            if isinstance(found, list):
                found = found.pop(0) if len(found) > 1 else found[0]
            return found

    def reply_to(self, body: dict) -> str:
        return self.reply_for(raw_text(body))  # the prompt as sent: material blocks intact

    def reply_for(self, text: str) -> str:
        kind = kind_of(text)
        if kind == "other":
            return "A"  # the preflight ping
        label = "response" if kind == "extract" else "statement"
        key = blocks(text, label)[-1]
        reply = self._pick(kind, key, exact=kind != "extract")
        if reply is None:
            reply = self.defaults[kind]
        if callable(reply):
            return reply(key)
        return echo_all(key) if reply == ECHO_ALL else reply

    def bodies(self, kind: str) -> list[dict]:
        """Request bodies of one task, in arrival order."""
        return [b for b in self.requests if kind_of(raw_text(b)) == kind]


__all__ = ["ECHO_ALL", "RLFHJudge", "blocks", "echo_all", "kind_of"]
