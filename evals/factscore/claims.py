"""The reasoning a response shows, and the atomic claims in it.

Reasoning (PROTOCOL 6): the think text; when the completion has no think block, the text
before the answer block (the whole completion when it has no answer tag either). An empty
reasoning has no claims, and its response still counts in N.

Claims come from the judge client with the shared `ATOMIC_FACTS` prompt at the judge's
temperature (0 by default: FActScore's T 0.7 extraction is repeatable only through its cache,
BASELINES 9), cached by the client. `judge=embedded judge.model=/local/hf/dir` makes a local HF
model the extractor. Exact duplicates within a response are dropped (the prompt's parser also
drops case-insensitive ones). A response whose extraction fails (transport budget spent or an
unreadable reply) has no claims and is counted apart; it is never given guessed claims.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

from factrl.evals.answers import extract_answer
from factrl.harness.judge import ATOMIC_FACTS

_ANSWER_OPEN = re.compile(r"<answer>", re.IGNORECASE)
_THINK_TAG = re.compile(r"</?think>", re.IGNORECASE)


def reasoning_text(completion: str) -> str:
    """The think text, else the text before the first answer tag (think tags removed)."""
    completion = completion or ""
    think = extract_answer(completion).think
    if think:
        return think
    if re.search(r"</?think>", completion, re.IGNORECASE):
        # an open think block that never closed (a truncated completion): its text is the reasoning
        opened = re.search(r"<think>", completion, re.IGNORECASE)
        if opened and not re.search(r"</think>", completion, re.IGNORECASE):
            before = _ANSWER_OPEN.split(completion[opened.end():], maxsplit=1)[0]
            return before.strip()
    head = _ANSWER_OPEN.split(completion, maxsplit=1)[0]
    return _THINK_TAG.sub(" ", head).strip()


def dedupe(claims: Sequence[str]) -> list[str]:
    """Claims in order with exact duplicates (after stripping) dropped."""
    return list(dict.fromkeys(c.strip() for c in claims if c and c.strip()))


def extract_claims(judge: Any, texts: Sequence[str]) -> list[list[str] | None]:
    """Claims per text (None where the judge failed); empty texts cost no call."""
    asked = [i for i, t in enumerate(texts) if t.strip()]
    out: list[list[str] | None] = [[] for _ in texts]
    if asked:
        results = judge.ask_many(ATOMIC_FACTS, [{"text": texts[i]} for i in asked])
        for i, result in zip(asked, results):
            out[i] = dedupe(result.value) if result.ok else None
        judge.check_failed_share(results, where="FActScore claim extraction")
    return out
