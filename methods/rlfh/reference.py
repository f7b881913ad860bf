"""Reference answers of RLFH's prompts (`judge=reference`, docs/CONTRACTS.md "Reference answers"):
deterministic rules over `ReferenceTools`, a stand-in for the paper's LLM judge, never its equal.

- extract: each sentence of the response (`tools.split_sentences`) is echoed verbatim, as the
  released judge echoes it, unless it is a refusal (`tools.refusal`) or a question; its
  statements are `tools.claims(sentence)`; a sentence of at least 3 words with no claim but with
  a name or number (a capitalised word after its first, other than "I", or a digit) is its own
  statement, without a leading first-person frame ("I recall that ...") and its final
  punctuation. Sentences with no statement are left out, as the release's judge is told to.
- verify: support = the highest `tools.nli(material, statement)` over the materials;
  Correct at support >= 0.8, Wrong at 0.4 <= support < 0.8 (the materials cover the statement's
  subject but not its claim: the stand-in's contradiction), Vague below 0.4, with no materials,
  or when the statement has nothing to check (the stand-in's 0.5 for an empty premise).
- assess: 5 when the statement holds the response's final answer (item "answer", the
  completion's answer block; `tools.match`); else 4 when it holds at least half of the
  question's content words (`tools.nli(statement, question)` >= 0.5), 3 when it holds some, 2
  when it names something (a capitalised word after its first, or a digit), 1 otherwise.
Change a rule and bump the prompts' versions (prompts.py): they are the reference answers' version.
"""
from __future__ import annotations

import re
from typing import Any

CORRECT_AT = 0.8
WRONG_AT = 0.4
MIN_WORDS = 3
_FRAME = re.compile(r"^(?:i|we)\s+(?:think|believe|recall|remember|know|guess|suppose|am sure|am certain|'m sure)"
                    r"\s+(?:that\s+)?", re.IGNORECASE)
_WORD = re.compile(r"[^\W_][\w'’.\-]*")


def _names_something(text: str) -> bool:
    words = _WORD.findall(text)
    return any(ch.isdigit() for ch in text) or any(w[0].isupper() and w != "I" for w in words[1:])


def _own_statement(sentence: str) -> str | None:
    if len(_WORD.findall(sentence)) < MIN_WORDS or not _names_something(sentence):
        return None
    statement = _FRAME.sub("", sentence.strip()).rstrip(" .!;:,")
    return statement[:1].upper() + statement[1:] if statement else None


def extract(item: dict, tools: Any) -> list[list]:
    out: dict[str, list[str]] = {}
    for sentence in tools.split_sentences(str(item.get("response") or "")):
        echo = sentence.strip()
        if not echo or echo.endswith("?") or tools.refusal(echo):
            continue
        statements = list(tools.claims(echo))
        if not statements:
            own = _own_statement(echo)
            statements = [own] if own else []
        if statements:
            merged = out.setdefault(echo, [])
            merged += [s for s in statements if s not in merged]
    return [[echo, statements] for echo, statements in out.items()]


def verify(item: dict, tools: Any) -> str:
    statement = str(item.get("statement") or "")
    if tools.nli("", statement) == 0.5:  # no content word or number to check
        return "vague"
    support = max((tools.nli(str(m), statement) for m in item.get("materials") or []), default=0.0)
    if support >= CORRECT_AT:
        return "correct"
    return "wrong" if support >= WRONG_AT else "vague"


def assess(item: dict, tools: Any) -> int:
    statement = str(item.get("statement") or "")
    answer = str(item.get("answer") or "").strip()
    if answer and not tools.refusal(answer) and tools.match(statement, [answer]):
        return 5
    question = str(item.get("question") or "")
    if tools.nli("", question) != 0.5:  # the question has content words to look for
        coverage = tools.nli(statement, question)
        if coverage >= 0.5:
            return 4
        if coverage > 0:
            return 3
    return 2 if _names_something(statement) else 1


__all__ = ["CORRECT_AT", "WRONG_AT", "assess", "extract", "verify"]
