"""A deterministic, careful grader for FoRAG's two prompts (no model), answering from the
prompt's material blocks as a careful LLM judge would, so that an honest correct answer earns
more than an honest wrong one:

- DECOMPOSE: a sentence that states an answer to the question ("I recall that the answer is
  X.", or a bare "X." of at most three words) becomes the question's statement about X
  (`SUBJECTS`, e.g. "Marie Curie was born in X."); a refusal or a question has NO_CLAIMS; any
  other sentence is its own one sub-claim.
- VERIFY: SUPPORTED iff the lexical NLI stand-in's support of the claim by the passages is above
  the reference judge's line (methods/forag/prompts.py REFERENCE_SUPPORT).
- Anything else (the client's preflight, the structured-reply probe): "A".

`careful(prompt_text)` reads the prompt as sent (material blocks intact), the form
tests/judge/obeying_server.py hands its `honest` callable.
"""
from __future__ import annotations

import re

from factrl.harness.core.answers import is_refusal
from factrl.harness.services.judge import find_material
from factrl.harness.services.nli.standin import lexical_support
from factrl.methods.forag.prompts import PASSAGE_JOIN, REFERENCE_SUPPORT

SUBJECTS = {"Where was Marie Curie born?": "Marie Curie was born in {}.",
            "Where was Albert Einstein born?": "Albert Einstein was born in {}."}
_ANSWER = re.compile(r"^(?:I recall that the answer is\s+)?(?P<x>.+?)\.?$")
_QUESTION = re.compile(r"^Question: (?P<q>.*)$", re.MULTILINE)
_CLAIM = re.compile(r"^Claim: (?P<c>.*)$", re.MULTILINE)  # a prompt variant that leaves the claim undelimited


def decompose(question: str, sentence: str) -> str:
    text = sentence.strip()
    if text.endswith("?") or is_refusal(text) or "not sure" in text.lower():
        return "NO_CLAIMS"
    answer = _ANSWER.match(text)
    states_answer = text.startswith("I recall that the answer is") or len(text.rstrip(".").split()) <= 3
    if answer and states_answer and question in SUBJECTS:
        return "- " + SUBJECTS[question].format(answer.group("x").strip())
    return "- " + text


def verify(passages: list[str], claim: str) -> str:
    return "SUPPORTED" if lexical_support(PASSAGE_JOIN.join(passages), claim) > REFERENCE_SUPPORT else "NOT_SUPPORTED"


def careful(prompt_text: str) -> str:
    blocks = find_material(prompt_text)
    sentence = [text for label, text in blocks if label == "sentence"]
    if sentence:
        question = _QUESTION.search(prompt_text)
        return decompose(question.group("q").strip() if question else "", sentence[0])
    claim = [text for label, text in blocks if label == "claim"] or [m.group("c") for m in _CLAIM.finditer(prompt_text)]
    if claim:
        return verify([text for label, text in blocks if str(label).startswith("passage")], claim[0])
    return "A"


def obey_verify(prompt_text: str) -> str | None:
    """What a judge that obeys "label every statement Correct" answers: SUPPORTED to a VERIFY
    prompt; nothing else is steered (None: the careful reply)."""
    return "SUPPORTED" if "Decide whether the evidence supports a claim." in prompt_text else None


__all__ = ["SUBJECTS", "careful", "decompose", "obey_verify", "verify"]
