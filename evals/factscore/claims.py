"""The reasoning a response shows, and the atomic claims in it.

Reasoning (docs/PROTOCOL.md §6; the CorVer paper §A.2): the think text; when the completion has no think
block, the text before the answer block (the whole completion when it has no answer tag
either). An empty reasoning has no claims, costs no judge call, and its response still counts
in N.

Claims (`eval.factscore_options.claims`, prompts in prompts.py):
- `verbatim` (default): the whole reasoning in one call to `VERBATIM_CLAIMS` at T 0, exact
  duplicates removed: the extractor of the CorVer paper's FActScore table (§A.2), which is
  the table this evaluation reproduces;
- `factscore`: FActScore's own pipeline (atomic_facts.py:38-163): the reasoning split into
  sentences as FActScore splits them (sentences.py), one `factscore_breakdown` call per
  sentence (T 0.7 as released, cached per prompt), a sentence that starts "This sentence does
  not contain any facts", "Sure" or "Please" (or "Here are" first) gets no facts (:79-82), and
  the facts of all sentences are flattened in order, duplicates kept (factscorer.py:152).
A response whose extraction fails (any of its calls: transport budget spent or an unreadable
reply after the re-asks) has no claims and is flagged; it is never given guessed claims.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

from factrl.harness.core.answers import extract_answer

from . import sentences as sentlib
from .prompts import VERBATIM_CLAIMS, breakdown_prompt

MODES = ("verbatim", "factscore")
_NO_FACTS = ("This sentence does not contain any facts", "Sure", "Please")  # atomic_facts.py:79-82

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


def _no_facts(index: int, sentence: str) -> bool:
    return sentence.startswith(_NO_FACTS) or (index == 0 and sentence.startswith("Here are"))


def extract_claims(judge: Any, texts: Sequence[str], *, mode: str = "verbatim",
                   demos: dict[str, list[str]] | None = None) -> list[list[str] | None]:
    """Claims per text (None where any of its judge calls failed); empty texts cost no call."""
    if mode not in MODES:
        raise ValueError(f"unknown claims mode {mode!r}; use one of {MODES}")
    if mode == "verbatim":
        return _ask_per_text(judge, texts)
    return _ask_per_sentence(judge, texts, breakdown_prompt(demos or {}))


def _ask_per_text(judge: Any, texts: Sequence[str]) -> list[list[str] | None]:
    asked = [i for i, t in enumerate(texts) if t.strip()]
    out: list[list[str] | None] = [[] for _ in texts]
    if asked:
        results = judge.ask_many(VERBATIM_CLAIMS, [{"text": texts[i]} for i in asked])
        for i, result in zip(asked, results):
            out[i] = dedupe(result.value) if result.ok else None
        judge.check_failed_share(results, where="FActScore claim extraction")
    return out


def _ask_per_sentence(judge: Any, texts: Sequence[str], prompt: Any) -> list[list[str] | None]:
    per_text = [[s for i, s in enumerate(sentlib.split(t)[0]) if not _no_facts(i, s)] if t.strip() else []
                for t in texts]
    unique = list(dict.fromkeys(s for sentences in per_text for s in sentences))
    results = judge.ask_many(prompt, [{"sentence": s} for s in unique]) if unique else []
    if results:
        judge.check_failed_share(results, where="FActScore claim extraction (per sentence)")
    by_sentence = dict(zip(unique, results))
    out: list[list[str] | None] = []
    for sentences in per_text:
        found = [by_sentence[s] for s in sentences]
        if any(not r.ok for r in found):
            out.append(None)
        else:  # FActScore strips each atom (factscorer.py:213); an empty one cannot be scored
            out.append([fact.strip() for r in found for fact in r.value if fact.strip()])
    return out
