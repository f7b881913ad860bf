"""Binary RAR's verifier as a `JudgePrompt` (`binary_rar_verify`).

- Render: the released prompt (judge_text.py, verbatim) as one user message, documents written
  as the release writes them ("Document {i+1}: {doc}" joined by blank lines, train.py:205-206),
  the instruction (the row's question: the release passes the user turn) and the response. The
  one change (docs/CONTRACTS.md, "Material, never instructions"): the response enters as
  `material(...)` and MATERIAL_RULE is added on its own line before ">>> Begin of the response
  <<<". Item {instruction, response, documents: [str]}.
- Decoding: 512 tokens, thinking off (the release's verifier: `verifier_max_tokens=512` and the
  renderer `qwen3_disable_thinking`, README.md's command and configs/verifier_*.json); the
  temperature is the judge group's (the release leaves Tinker's sampling default).
- Parse: the release reads `json.loads(reply.strip("```json").strip("```"))["SCORE"]` as a
  float (train.py:217-246). Here: the reply, a ```json fence around it allowed, must be one JSON
  object whose SCORE is 0 or 1 (a number or the string "0" / "1", as the prompt's own example
  writes it); anything else is a ParseError (re-asked, then a failed item: no signal). The
  release scored those 0.0, or SCORE itself when it was another number (2 -> 2.0): vectors in
  tests/reference_vectors/binary_rar/verify.json, README "Fidelity".
- Reference answer (judge=reference; a stand-in): a response with no answer, or an abstention,
  makes no claim and contradicts nothing: 1; otherwise 1 when the answer occurs in the documents
  (the protocol's matcher, one way), else 0. The release's verifier also passes claims the
  documents do not mention; a literal check cannot tell those from contradictions.

Bump `version` with any change of text, parser or decoding.
"""
from __future__ import annotations

import json
import re
from typing import Any

from factrl.harness.core.answers import extract_answer
from factrl.harness.services.judge import MATERIAL_RULE, Decoding, JudgePrompt, ParseError, ReferenceTools, material

from .judge_text import TEMPLATE

SOURCE = "chentong0/rl-binary-rar@d97ea69 binary_rar_tinker/prompts.py:1-53; parse train.py:217-246"
PAPER_VERIFIER = "Qwen/Qwen3-32B"  # README.md (the open-instruct verifier server) and binary_rar_tinker/method.md §4
_ANCHOR = ">>> Begin of the response <<<"
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL | re.IGNORECASE)


def _with_rule(text: str) -> str:
    if text.count(_ANCHOR) != 1:
        raise AssertionError(f"anchor {_ANCHOR!r} must occur once in the released prompt")
    return text.replace(_ANCHOR, f"{MATERIAL_RULE}\n{_ANCHOR}", 1)


_TEMPLATE = _with_rule(TEMPLATE)


def documents_text(documents: list[str]) -> str:
    """The release's documents block (train.py:206)."""
    return "\n\n".join(f"Document {i + 1}: {doc}" for i, doc in enumerate(documents))


def render(item: dict) -> list[dict[str, str]]:
    for key in ("instruction", "response", "documents"):
        if item.get(key) is None:
            raise KeyError(f"judge prompt binary_rar_verify needs item[{key!r}]")
    text = _TEMPLATE.format(documents=documents_text(list(item["documents"])), instruction=str(item["instruction"]),
                            response=material(str(item["response"]), label="response")).strip()
    return [{"role": "user", "content": text}]


def parse_score(text: str) -> int:
    """1 (no contradiction) or 0 (a contradiction) from a reply that is one JSON object."""
    reply = str(text).strip()
    fenced = _FENCE.match(reply)
    body = fenced.group(1) if fenced else reply
    try:
        obj: Any = json.loads(body)
    except ValueError:
        raise ParseError('expected one JSON object {"REASONING": "...", "SCORE": 0 or 1}') from None
    if not isinstance(obj, dict) or "SCORE" not in obj:
        raise ParseError('the JSON object has no "SCORE"')
    score = obj["SCORE"]
    if isinstance(score, str) and score.strip() in ("0", "1"):
        return int(score.strip())
    if isinstance(score, (int, float)) and not isinstance(score, bool) and score in (0, 1):
        return int(score)
    raise ParseError(f'"SCORE" is {score!r}; it must be 0 or 1')


def reference_score(item: dict, tools: ReferenceTools) -> int:
    """judge=reference: module docstring."""
    response = str(item.get("response") or "")
    extraction = extract_answer(response, think=False)
    answer = extraction.answer if extraction.has_answer_block else response.strip()
    if not answer or tools.refusal(answer):
        return 1
    return 1 if tools.match(documents_text(list(item.get("documents") or [])), [answer]) else 0


VERIFY = JudgePrompt(
    "binary_rar_verify", "1", render, parse_score,
    format_hint='one JSON object: {"REASONING": "...", "SCORE": 0 or 1}',
    source=SOURCE, decoding=Decoding(max_tokens=512, enable_thinking=False), reference=reference_score)

__all__ = ["PAPER_VERIFIER", "SOURCE", "VERIFY", "documents_text", "parse_score", "reference_score", "render"]
