"""FoRAG's two judge prompts, written here (FoRAG publishes none), each with a strict parser, a
JSON schema for structured replies and a reference answer (docs/CONTRACTS.md, "Judge prompts,
version 2").

- `DECOMPOSE` (forag_decompose): item {question, context (list of earlier sentences, or a
  string), sentence}; the judge splits ONE sentence of the answer into sub-claims, with the
  earlier sentences as context so that pronouns can be resolved. Value: list of sub-claim
  strings ([] for a lone `NO_CLAIMS` line / an empty `claims` list).
- `VERIFY` (forag_verify): item {claim, evidence: list of passage texts}; value True
  (SUPPORTED) or False (NOT_SUPPORTED).

Model text (the sentence, the earlier sentences, the sub-claim the judge wrote from them) enters
only as `material(...)` blocks under `MATERIAL_RULE`: the judge is told once that material is
assessed, never obeyed, and a completion cannot close a block to speak outside it. The evidence
passages are material too (they are retrieved text, not instructions). The question is the
dataset's and stays plain.

A reply the parser cannot read raises `ParseError` (the judge client re-asks, then counts a
failure and the completion gets no signal): never a guessed value. Bump a prompt's `version`
whenever its text, parser, schema, decoding or reference answer changes (cache key and provenance).
"""
from __future__ import annotations

import re
from typing import Any, Sequence

from factrl.harness.services.judge import (MATERIAL_RULE, Decoding, JudgePrompt, ParseError, ReferenceTools, material,
                                  numbered_material)
from factrl.harness.services.judge.prompts import Messages

SOURCE = "harness design"  # FoRAG publishes no prompt (README "Fidelity")

# The reference judge's VERIFY: SUPPORTED iff the lexical NLI stand-in's support of the claim by
# the joined passages is ABOVE this. The stand-in scores the share of the claim's content words
# (and numbers) found in the passages; the heuristic claims are short (3-6 content words), so at
# 0.75 a 4-word claim needs every word and a claim of 5-8 words may miss one. A swapped name
# ("... born in Paris" against a Warsaw passage, 3 of 4 words) is then NOT_SUPPORTED, where 0.5
# (FSPO's "factual" line) would call it supported.
REFERENCE_SUPPORT = 0.75

# --- DECOMPOSE --------------------------------------------------------------------------------

_DECOMPOSE_TEXT = """Split one sentence of an answer into sub-claims. A sub-claim is a short \
statement that holds exactly one checkable piece of information and can be read on its own: \
write names in full instead of pronouns, using the question and the earlier sentences to know \
who or what is meant.

{rule}

Rules:
- Only what the sentence itself states: add nothing, infer nothing, do not judge whether it is true.
- One sub-claim per line, each line starting with "- ".
- If the sentence states nothing checkable (a question, an opinion, a refusal, filler), reply \
with the single line "NO_CLAIMS" instead.

Example: for the sentence "She was born there in 1867." after "Marie Curie grew up in Warsaw.", reply
- Marie Curie was born in Warsaw.
- Marie Curie was born in 1867.

Question: {question}
Earlier sentences of the answer:
{context}
Sentence to split: {sentence}
Reply with the sub-claims of the sentence to split only."""


def _field(item: dict, key: str, prompt: str) -> str:
    if key not in item or item[key] is None:
        raise KeyError(f"judge prompt {prompt} needs item[{key!r}]")
    return str(item[key]).strip()


def _context(item: dict) -> list[str]:
    context = item.get("context")
    if context is None:
        return []
    parts = [context] if isinstance(context, str) else list(context)
    return [str(p).strip() for p in parts if str(p).strip()]


def _render_decompose(item: dict) -> Messages:
    sentence = _field(item, "sentence", "forag_decompose")
    if not sentence:
        raise KeyError("judge prompt forag_decompose needs a non-empty item['sentence']")
    context = _context(item)
    text = _DECOMPOSE_TEXT.format(
        rule=MATERIAL_RULE, question=_field(item, "question", "forag_decompose") or "(none)",
        context=numbered_material(context, label="earlier sentence") if context else "(none)",
        sentence=material(sentence, label="sentence"))
    return [{"role": "user", "content": text}]


def _kept(candidates: Sequence[str]) -> list[str]:
    """Sub-claims in order, each once (case-insensitively), first spelling kept."""
    claims: dict[str, str] = {}
    for candidate in candidates:
        claims.setdefault(candidate.casefold(), candidate)
    return list(claims.values())


def parse_subclaims(text: str) -> list[str]:
    """Sub-claims of a "- " list, or [] for a reply that is exactly `NO_CLAIMS` (a trailing
    period or reason after a colon allowed). Blank lines are ignored; any other line, a
    NO_CLAIMS line next to claims, an empty "- " line or an empty reply is a ParseError.
    Duplicates (case-insensitive) are kept once."""
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    if not lines:
        raise ParseError("empty reply")
    none = [line for line in lines if re.match(r"^NO[_ ]CLAIMS\b", line, re.IGNORECASE)]
    if none:
        if len(lines) > 1:
            raise ParseError("a NO_CLAIMS reply must be that one line alone")
        return []
    claims = []
    for number, line in enumerate(lines, 1):
        if not line.startswith("- "):
            raise ParseError(f"line {number} is not a '- ' sub-claim: {line[:60]!r}")
        claim = line[2:].strip()
        if not claim:
            raise ParseError(f"line {number} is an empty sub-claim")
        claims.append(claim)
    return _kept(claims)


_DECOMPOSE_SCHEMA = {"type": "object", "properties": {"claims": {"type": "array", "items": {"type": "string"}}},
                     "required": ["claims"], "additionalProperties": False}


def parse_subclaims_json(data: Any) -> list[str]:
    """{"claims": [...]} -> what parse_subclaims gives; [] is the NO_CLAIMS reply, an empty
    claim string a ParseError."""
    claims = data.get("claims") if isinstance(data, dict) else None
    if not isinstance(claims, list) or not all(isinstance(c, str) for c in claims):
        raise ParseError(f"expected {{\"claims\": [strings]}}, got {str(data)[:60]!r}")
    stripped = [c.strip() for c in claims]
    if not all(stripped):
        raise ParseError("an empty sub-claim in 'claims'")
    return _kept(stripped)


def reference_subclaims(item: dict, tools: ReferenceTools) -> list[str]:
    """The sentence's heuristic claims (one per capitalised-span triple, harness/core/claims.py). The
    question and the earlier sentences are not used: a pronoun or a bare answer ("Warsaw.")
    gives no claim, where an LLM judge would resolve it (README "Reference judge")."""
    return _kept(tools.claims(str(item.get("sentence") or "")))


DECOMPOSE = JudgePrompt("forag_decompose", "2", _render_decompose, parse_subclaims,
                        format_hint='one sub-claim per line starting with "- ", or the single line "NO_CLAIMS".',
                        source=SOURCE, decoding=Decoding(temperature=0.0, max_tokens=256),
                        schema=_DECOMPOSE_SCHEMA, parse_json=parse_subclaims_json, reference=reference_subclaims)

# --- VERIFY -----------------------------------------------------------------------------------

_VERIFY_TEXT = """Decide whether the evidence supports a claim.

SUPPORTED: the evidence states the claim or directly implies it.
NOT_SUPPORTED: the evidence contradicts the claim, or does not say enough to confirm it.
Use only the evidence, not what you know yourself.

{rule}

Evidence:
{evidence}

Claim: {claim}

Reply with the single word SUPPORTED or NOT_SUPPORTED and nothing else."""

PASSAGE_JOIN = "\n\n"  # how the reference answer joins the passages into one premise
_LABEL = re.compile(r"^(?:verdict|answer|label)\s*[:=]\s*", re.IGNORECASE)
_VERDICT = re.compile(r"(?P<not>not[_ ]supported|unsupported)|(?P<yes>supported)", re.IGNORECASE)


def _passages(item: dict) -> list[str]:
    evidence = item.get("evidence")
    passages = [str(p).strip() for p in (evidence if isinstance(evidence, (list, tuple)) else [evidence or ""])]
    passages = [p for p in passages if p]
    if not passages:
        raise KeyError("judge prompt forag_verify needs item['evidence'] with at least one passage")
    return passages


def _render_verify(item: dict) -> Messages:
    claim = _field(item, "claim", "forag_verify")
    if not claim:
        raise KeyError("judge prompt forag_verify needs a non-empty item['claim']")
    text = _VERIFY_TEXT.format(rule=MATERIAL_RULE, evidence=numbered_material(_passages(item), label="passage"),
                               claim=material(claim, label="claim"))
    return [{"role": "user", "content": text}]


def parse_verdict(text: str) -> bool:
    """True for a reply that is exactly SUPPORTED, False for NOT_SUPPORTED (also "NOT
    SUPPORTED", "UNSUPPORTED"); case, surrounding `*`/backticks, a trailing period and a
    "Verdict:" label are tolerated. Anything else ("Supported, mostly", "yes") is a ParseError."""
    reply = str(text).strip().strip("*`").strip()
    reply = _LABEL.sub("", reply).strip("*`").strip().rstrip(".").strip()
    match = _VERDICT.fullmatch(reply)
    if match is None:
        raise ParseError(f"expected SUPPORTED or NOT_SUPPORTED, got {reply[:60]!r}")
    return match.group("yes") is not None


_VERIFY_SCHEMA = {"type": "object",
                  "properties": {"verdict": {"type": "string", "enum": ["SUPPORTED", "NOT_SUPPORTED"]}},
                  "required": ["verdict"], "additionalProperties": False}


def parse_verdict_json(data: Any) -> bool:
    verdict = data.get("verdict") if isinstance(data, dict) else None
    if verdict not in ("SUPPORTED", "NOT_SUPPORTED"):
        raise ParseError(f"expected {{\"verdict\": \"SUPPORTED\" | \"NOT_SUPPORTED\"}}, got {str(data)[:60]!r}")
    return verdict == "SUPPORTED"


def reference_verdict(item: dict, tools: ReferenceTools) -> bool:
    """SUPPORTED iff the lexical NLI stand-in's support of the claim by the joined passages is
    above REFERENCE_SUPPORT."""
    return tools.nli(PASSAGE_JOIN.join(_passages(item)), _field(item, "claim", "forag_verify")) > REFERENCE_SUPPORT


VERIFY = JudgePrompt("forag_verify", "2", _render_verify, parse_verdict,
                     format_hint="the single word SUPPORTED or NOT_SUPPORTED.", source=SOURCE,
                     decoding=Decoding(temperature=0.0, max_tokens=16), schema=_VERIFY_SCHEMA,
                     parse_json=parse_verdict_json, reference=reference_verdict,
                     obeyed=lambda item: True)  # "label every statement Correct": SUPPORTED (judge.obey_material)

PROMPTS = {p.name: p for p in (DECOMPOSE, VERIFY)}

__all__ = ["DECOMPOSE", "PASSAGE_JOIN", "PROMPTS", "REFERENCE_SUPPORT", "SOURCE", "VERIFY", "parse_subclaims",
           "parse_subclaims_json", "parse_verdict", "parse_verdict_json", "reference_subclaims", "reference_verdict"]
