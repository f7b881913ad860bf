"""The judge prompts the baselines share, each with a strict parser and a version.

A `JudgePrompt` renders one item (a dict) into chat messages and parses the judge's reply
into a value, or raises `ParseError`: a reply it cannot read is never turned into a guessed
value (docs/BASELINES.md §9: KnowRL's uppercased "CORRECT|A first" search grades any reply holding an
"a" as CORRECT; simple-evals takes the first capital A/B/C anywhere, so "Based on" is B).
The judge client re-asks a bounded number of times with `reask(...)`, then gives up on that
item (no signal, counted). Change `version` whenever the text or the parser changes: it is
part of the cache key and of every result's provenance.

- `SIMPLEQA_GRADE` (the SimpleQA rubric, reworded; KnowRL grades with its own released prompt,
  methods/knowrl/prompts.py): item
  {question, gold (str or list of str), answer}; value "CORRECT" | "INCORRECT" | "NOT_ATTEMPTED".
- `ATOMIC_FACTS` (KnowRL's fact-extraction rules): item {text}; value: list of fact strings ([]
  for a NON_FACTUAL reply); facts are the "- " lines of >= 3 words, deduplicated case-insensitively.

Version 2 (docs/CONTRACTS.md, "Judge prompts, version 2"): the model output (the graded answer,
the text to split) enters as `material(...)` under the `MATERIAL_RULE` sentence; each prompt has
a JSON schema for structured replies (`parse_json` gives the value `parse` gives) and a reference
answer for judge=reference (the protocol matcher's grade; the text's heuristic claims).

The prompt texts are written here from the rubric facts, not copied from published prompts.
"""
from __future__ import annotations

import re
from typing import Any

from .spec import (MATERIAL_RULE, UNSTATED, Decoding, JudgePrompt, Messages, ParseError, ReferenceTools,
                   find_material, material, numbered_material)


def _field(item: dict, key: str, prompt: str) -> str:
    if key not in item or item[key] is None:
        raise KeyError(f"judge prompt {prompt} needs item[{key!r}]")
    return str(item[key]).strip()


# --- SIMPLEQA_GRADE ---------------------------------------------------------------------------

GRADES = {"A": "CORRECT", "B": "INCORRECT", "C": "NOT_ATTEMPTED"}

_GRADE_TEXT = """You are grading one answer to a question by comparing it with the gold answer.
{rule}

Question: {question}
Gold answer: {gold}
Answer to grade: {answer}

Pick exactly one grade:
A) CORRECT - the answer gives the key information of the gold answer and says nothing that \
contradicts it. Case, punctuation, word order and hedging do not matter as long as the gold \
information is there. A small misspelling of a name is fine, and details the question already \
implies may be left out. A number must agree with the gold answer down to the gold's last \
significant figure: for a gold answer of 120k, "124k" is correct.
B) INCORRECT - the answer states something that contradicts the gold answer, even if it is \
hedged ("I think", "maybe"). For a gold answer of 120k, "100k" is incorrect.
C) NOT_ATTEMPTED - the gold information is missing from the answer and nothing in it \
contradicts the gold answer: "I don't know", a request for more context, or a number too vague \
to check ("around 100k" for a gold answer of 120k).

Reply with the single letter A, B or C and nothing else."""


def _render_grade(item: dict) -> Messages:
    gold = item.get("gold")
    if isinstance(gold, (list, tuple)):
        golds = [str(g).strip() for g in gold]
    else:
        golds = [_field(item, "gold", "simpleqa_grade")]
    if not golds or not all(golds):
        raise KeyError("judge prompt simpleqa_grade needs a non-empty item['gold']")
    text = _GRADE_TEXT.format(rule=MATERIAL_RULE, question=_field(item, "question", "simpleqa_grade"),
                              gold=" / ".join(golds), answer=material(_field(item, "answer", "simpleqa_grade"),
                                                                      label="answer"))
    return [{"role": "user", "content": text}]


def _golds(item: dict) -> list[str]:
    gold = item.get("gold")
    golds = [str(g).strip() for g in gold] if isinstance(gold, (list, tuple)) else [str(gold or "").strip()]
    return [g for g in golds if g]


_TAG = re.compile(r"^<answer>\s*(.*?)\s*</answer>$", re.IGNORECASE | re.DOTALL)
_LABEL = re.compile(r"^(?:grade|answer|verdict)\s*[:=]\s*", re.IGNORECASE)
# The whole reply: a letter (optionally bracketed / followed by ")", ".", ":"), a grade word, or
# the letter then its word ("A) CORRECT"). Nothing else may surround it.
_REPLY = re.compile(r"^(?:\(?(?P<letter>[ABCabc])\)?(?:[.):]|\s*-)?)?\s*(?P<word>correct|incorrect|not[_ ]attempted)?"
                    r"\s*\.?$", re.IGNORECASE)


def parse_grade(text: str) -> str:
    """'CORRECT' | 'INCORRECT' | 'NOT_ATTEMPTED' from a reply that is exactly a grade."""
    reply = str(text).strip().strip("*`").strip()
    tag = _TAG.match(reply)
    if tag:
        reply = tag.group(1).strip("*`").strip()
    reply = _LABEL.sub("", reply).strip("*`").strip()
    match = _REPLY.match(reply) if reply else None
    if not match or not (match.group("letter") or match.group("word")):
        raise ParseError(f"expected one of A, B, C, got {reply[:60]!r}")
    by_letter = GRADES[match.group("letter").upper()] if match.group("letter") else None
    word = match.group("word")
    by_word = word.upper().replace(" ", "_") if word else None
    if by_letter and by_word and by_letter != by_word:
        raise ParseError(f"letter and grade disagree in {reply[:60]!r}")
    return by_letter or by_word  # type: ignore[return-value]


_GRADE_SCHEMA = {"type": "object", "properties": {"grade": {"type": "string", "enum": ["A", "B", "C"]}},
                 "required": ["grade"], "additionalProperties": False}


def _grade_json(data: Any) -> str:
    letter = data.get("grade") if isinstance(data, dict) else None
    if letter not in GRADES:
        raise ParseError(f"expected {{\"grade\": \"A\" | \"B\" | \"C\"}}, got {str(data)[:60]!r}")
    return GRADES[letter]


def reference_grade(item: dict, tools: ReferenceTools) -> str:
    """The protocol's verdict as a grade: an empty answer or one of the abstention forms is
    NOT_ATTEMPTED, an answer the closed-book matcher credits CORRECT, anything else INCORRECT."""
    answer = str(item.get("answer") or "").strip()
    if not answer or tools.refusal(answer):
        return "NOT_ATTEMPTED"
    return "CORRECT" if tools.match(answer, _golds(item)) else "INCORRECT"


SIMPLEQA_GRADE = JudgePrompt("simpleqa_grade", "2", _render_grade, parse_grade,
                             format_hint="the single letter A, B or C.",
                             source="harness design (the SimpleQA grading rubric, reworded)",
                             decoding=Decoding(max_tokens=8), schema=_GRADE_SCHEMA, parse_json=_grade_json,
                             reference=reference_grade)


# --- ATOMIC_FACTS -----------------------------------------------------------------------------

_FACTS_TEXT = """List the atomic facts stated in the text below. An atomic fact is a short \
sentence that holds one piece of information and can be read on its own (write names in full \
instead of pronouns).

Rules:
- Only facts the text states explicitly: add nothing, infer nothing, do not judge whether they are true.
- {rule}
- When the text corrects itself, keep only the final version of that fact.
- One fact per line, each line starting with "- ".
- If the text states no facts at all (only questions, opinions, refusals or filler), reply with \
the single line "NON_FACTUAL: <short reason>" instead.

Text:
{text}"""

MIN_FACT_WORDS = 3  # docs/BASELINES.md §5.1: shorter "- " lines are dropped


def _render_facts(item: dict) -> Messages:
    text = material(_field(item, "text", "atomic_facts"), label="text")
    return [{"role": "user", "content": _FACTS_TEXT.format(rule=MATERIAL_RULE, text=text)}]


def parse_facts(text: str) -> list[str]:
    """Facts of a "- " list, or [] for a NON_FACTUAL reply.

    Allowed besides fact lines: blank lines and one header line ending in ":" before the first
    fact (e.g. "Facts:"). Any other line, a NON_FACTUAL line next to facts, or a reply with
    neither is a ParseError. Lines under MIN_FACT_WORDS words are dropped (not errors).
    """
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    if not lines:
        raise ParseError("empty reply")
    non_factual = [line for line in lines if line.upper().startswith("NON_FACTUAL")]
    bullets = [line for line in lines if line.startswith("- ")]
    if non_factual:
        if bullets or len(lines) > 1:
            raise ParseError("a NON_FACTUAL reply must be that one line alone")
        return []
    if not bullets:
        raise ParseError(f"no '- ' fact lines in {lines[0][:60]!r}")
    for number, line in enumerate(lines):
        if not line.startswith("- ") and not (number == 0 and line.endswith(":")):
            raise ParseError(f"line {number + 1} is not a '- ' fact: {line[:60]!r}")
    return _kept([line[2:] for line in bullets])


def _kept(candidates: list[str]) -> list[str]:
    """Facts of >= MIN_FACT_WORDS words, first spelling kept, deduplicated case-insensitively."""
    facts: dict[str, str] = {}
    for candidate in candidates:
        fact = candidate.strip()
        if len(fact.split()) >= MIN_FACT_WORDS:
            facts.setdefault(fact.casefold(), fact)
    return list(facts.values())


_FACTS_SCHEMA = {"type": "object", "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
                 "required": ["facts"], "additionalProperties": False}


def _facts_json(data: Any) -> list[str]:
    """{"facts": [...]} -> the facts parse_facts would keep; an empty list is the NON_FACTUAL reply."""
    facts = data.get("facts") if isinstance(data, dict) else None
    if not isinstance(facts, list) or not all(isinstance(f, str) for f in facts):
        raise ParseError(f"expected {{\"facts\": [strings]}}, got {str(data)[:60]!r}")
    return _kept(facts)


def reference_facts(item: dict, tools: ReferenceTools) -> list[str]:
    """The text's heuristic claims (one per capitalised-span triple), kept as parse_facts keeps."""
    return _kept(tools.claims(str(item.get("text") or "")))


ATOMIC_FACTS = JudgePrompt("atomic_facts", "2", _render_facts, parse_facts,
                           format_hint='one fact per line starting with "- ", or the single line '
                                       '"NON_FACTUAL: <short reason>".',
                           source="harness design (KnowRL's fact-extraction rules, reworded)",
                           schema=_FACTS_SCHEMA, parse_json=_facts_json, reference=reference_facts)

PROMPTS = {p.name: p for p in (SIMPLEQA_GRADE, ATOMIC_FACTS)}

__all__ = ["ATOMIC_FACTS", "GRADES", "MATERIAL_RULE", "MIN_FACT_WORDS", "PROMPTS", "SIMPLEQA_GRADE", "UNSTATED",
           "Decoding", "JudgePrompt", "Messages", "ParseError", "ReferenceTools", "find_material", "material",
           "numbered_material", "parse_facts", "parse_grade", "reference_facts", "reference_grade"]
