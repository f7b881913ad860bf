"""RLFH's three judge prompts as released (texts.py, AlignRM/RLFH@78cd846 annotate.py:19-99), their
decoding, their parsers and their reference answers (reference.py).

- `EXTRACT` (one call per response): item {response}; the judge picks the sentences that hold
  facts, ECHOES each one (`>> Sentence N: <sentence>`) and lists its atomic statements
  (`* statement`); value [[echoed sentence, [statement, ...]], ...] in reply order, or [] for
  "No statements". The reward maps each echo back onto the response (placement.py).
  T 1.0 / top-p 1.0 / 4,096 tokens (annotate.py:191-198); on an unreadable reply the method asks
  again with the temperature raised by 0.25 (annotate.py:244-245; reward.py `_ask`).
- `VERIFY` (per statement): item {materials: [str], statement}; value "correct" | "vague" |
  "wrong"; T 0.3 / top-p 0.3 / 32 tokens (annotate.py:200-223).
- `ASSESS` (per statement): item {question, response, statement}; value an int 1..5;
  T 0.3 / top-p 0.3 / 48 tokens (annotate.py:225-233).

Model text (the response, the statements) enters a prompt only through `material(...)`, a
block the text cannot close, and each prompt carries the harness's MATERIAL_RULE line: the
released words are otherwise unchanged (the worked examples' response and statement are put in
material blocks too, so the example shows the judge the form it will see). Placeholders are
filled in one pass, so a response holding "{statement}" is never filled twice (the release
chains str.replace, annotate.py:273-283).

Parsers (`parser` setting): `released` reads replies as RLFH does (annotate.py:286-343,
reference vectors tests/reference_vectors/rlfh/parse_*.json): verdicts by case-insensitive
substring in the order Correct, Vague, Wrong (so "Incorrect" reads as Correct), scores as the
first of 1..5 found anywhere ("5 (out of 10)" reads as 1); `strict` accepts only the bare word
or digit. Extraction is always parsed as released. A reply neither parser can read raises
ParseError: no value is ever guessed. Bump a prompt's `version` with its text, parser or decoding.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Callable

from factrl.harness.services.judge.prompts import (MATERIAL_RULE, Decoding, JudgePrompt, Messages, ParseError,
                                          material)

from . import reference
from .texts import ASSESS_PROMPT, EXTRACT_PROMPT, SOURCE, VERIFY_PROMPT

VERDICTS = ("correct", "vague", "wrong")  # what VERIFY's parsers return (the maps' "Hedged ..." never occur)
PARSERS = ("released", "strict")
DECODINGS = ("released", "judge")
EXTRACT_T_STEP = 0.25  # 1 / retry_times (annotate.py:104, :244-245): added after each unreadable extraction


def _need(item: dict, key: str, prompt: str):
    if item.get(key) is None:
        raise KeyError(f"judge prompt {prompt} needs item[{key!r}]")
    return item[key]


def _wrap_example(template: str, head: str, tail: str, label: str) -> str:
    """The worked example's `label` text (between `head` and `tail`, first occurrence) in a block."""
    start = template.index(head) + len(head)
    end = template.index(tail, start)
    return template[:start] + material(template[start:end], label=label) + template[end:]


def _add_rule(template: str, after: str) -> str:
    """MATERIAL_RULE as one more instruction line, right after the released `after` line."""
    at = template.index(after) + len(after)
    return template[:at] + MATERIAL_RULE + "\n" + template[at:]


_PLACEHOLDER = re.compile(r"\{(response|materials|statement|question)\}")


def _fill(template: str, values: dict[str, str]) -> str:
    # One pass: text put in for one placeholder is never searched for another.
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


# The templates as sent: released text + the material rule + the examples in material blocks.
_EXTRACT = _wrap_example(_add_rule(EXTRACT_PROMPT, "- Strictly follow the output format shown in the example.\n"),
                         "# Response\n", "\n\n# Statements", "response")
_VERIFY = _wrap_example(_add_rule(VERIFY_PROMPT, "Directly output the verification result without explanation.\n"),
                        "# Statement\n", "\n# Verification", "statement")
_ASSESS = _wrap_example(_wrap_example(_add_rule(ASSESS_PROMPT, "Directly output the evaluation result without "
                                                               "explanation.\n"),
                                      "# Response\n", "\n# Statement", "response"),
                        "# Statement\n", "\n# Evaluation", "statement")


def _user(text: str) -> Messages:
    return [{"role": "user", "content": text}]  # one user message, no system prompt (completion.py:84)


def render_extract(item: dict) -> Messages:
    return _user(_fill(_EXTRACT, {"response": material(str(_need(item, "response", "rlfh_extract")), "response")}))


def render_verify(item: dict) -> Messages:
    materials = _need(item, "materials", "rlfh_verify")
    # '- ' + text.strip() per material, as annotate.py:272 (none: an empty line, as released)
    listed = "\n".join(f"- {str(m).strip()}" for m in materials)
    return _user(_fill(_VERIFY, {"materials": listed,
                                 "statement": material(str(_need(item, "statement", "rlfh_verify")), "statement")}))


def render_assess(item: dict) -> Messages:
    return _user(_fill(_ASSESS, {"question": str(_need(item, "question", "rlfh_assess")),
                                 "response": material(str(_need(item, "response", "rlfh_assess")), "response"),
                                 "statement": material(str(_need(item, "statement", "rlfh_assess")), "statement")}))


# --- parsers ------------------------------------------------------------------------------

# annotate.py:288: one run of blocks, each a `>> Sentence N: <echo>` line ending in a newline,
# then any `*` / `-` lines; found anywhere in the reply (text before or after is ignored).
_BLOCKS = re.compile(r"(?:>> Sentence \d+:.+\n+(?:[*-].+\n*)*)+")
_HEADER = re.compile(r">> Sentence \d+:")


def parse_extract(text: str) -> list[list]:
    """[[echoed sentence, [statements]], ...] as RLFH's extract_parse reads a reply.

    Exactly one run of blocks (two runs separated by other text: ParseError); none: [] when the
    reply mentions "no" and "statement" / "sentence" (case-insensitive), else ParseError. A
    header line must hold exactly one `>> Sentence N:` and a non-empty echo. A sentence echoed
    twice merges its statements; a statement listed twice under one echo counts once (RLFH keys
    labels by statement, annotate.py:174); a header without statements is dropped.
    """
    reply = str(text)
    runs = _BLOCKS.findall(reply)
    if not runs:
        lowered = reply.lower()
        if "no" in lowered and ("statement" in lowered or "sentence" in lowered):
            return []
        raise ParseError("no '>> Sentence N: <sentence>' block and no 'No statements'")
    if len(runs) > 1:
        raise ParseError("more than one run of '>> Sentence' blocks (text between them)")
    result: dict[str, list[str]] = {}
    echo = None
    for line in (part for part in runs[0].split("\n") if part):
        if line.startswith(">> Sentence"):
            parts = [p.strip() for p in _HEADER.split(line) if p.strip()]
            if len(parts) != 1:
                raise ParseError(f"a header line must echo one sentence: {line[:60]!r}")
            echo = parts[0]
        elif line[0] in "*-":
            if echo is None:
                raise ParseError("a statement before any '>> Sentence N:' line")
            statements = result.setdefault(echo, [])
            statement = line[1:].strip()
            if statement not in statements:
                statements.append(statement)
        else:
            raise ParseError(f"unexpected line {line[:60]!r}")
    return [[echo, statements] for echo, statements in result.items()]


_VAGUE_PHRASES = ("need more context", "need access to", "provide more context", "need additional context",
                  "need additional information", "not supported")  # annotate.py:334-339, case-sensitive


def parse_verdict(text: str) -> str:
    """RLFH's verify_parse: the first of correct / vague / wrong found in the lower-cased reply,
    then six case-sensitive phrases meaning vague; anything else is unreadable."""
    reply = str(text)
    for verdict in VERDICTS:  # the release's order: Correct, Vague, Wrong
        if verdict in reply.lower():
            return verdict
    if any(phrase in reply for phrase in _VAGUE_PHRASES):
        return "vague"
    raise ParseError(f"no Correct, Vague or Wrong in {reply.strip()[:60]!r}")


def parse_score(text: str) -> int:
    """RLFH's assess_parse: the first of 1, 2, 3, 4, 5 (in that order) occurring anywhere."""
    reply = str(text)
    for score in range(1, 6):
        if str(score) in reply:
            return score
    raise ParseError(f"no digit 1-5 in {reply.strip()[:60]!r}")


_LABEL = re.compile(r"^(?:verdict|verification|evaluation|answer|label|score|rating)\s*[:=]\s*", re.IGNORECASE)


def _bare(text: str) -> str:
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    if len(lines) == 2 and lines[0].lstrip("#").strip().lower() in ("verification", "evaluation"):
        lines = lines[1:]  # the prompt's own "# Verification" / "# Evaluation" heading echoed
    reply = " ".join(lines).strip("*`\"'").strip()
    return _LABEL.sub("", reply).strip("*`\"'").strip()


def parse_verdict_strict(text: str) -> str:
    """Only the bare word (any case, a final period allowed): "Incorrect" is unreadable."""
    reply = _bare(text).rstrip(".").strip().lower()
    if reply not in VERDICTS:
        raise ParseError(f"expected Correct, Vague or Wrong, got {reply[:60]!r}")
    return reply


def parse_score_strict(text: str) -> int:
    """Only one digit 1-5 (optionally "/5" and a final period): "5 (out of 10)" is unreadable."""
    match = re.fullmatch(r"([1-5])(?:\s*/\s*5)?\.?", _bare(text))
    if not match:
        raise ParseError(f"expected one digit 1-5, got {_bare(text)[:60]!r}")
    return int(match.group(1))


# --- the prompts ----------------------------------------------------------------------------

EXTRACT = JudgePrompt("rlfh_extract", "2", render_extract, parse_extract,
                      format_hint="'>> Sentence <N>: <the sentence>' lines, each followed by '* <statement>' "
                                  "lines, or 'No statements'.",
                      source=f"{SOURCE}:19-49 (text), :191-198 (decoding), :286-316 (parse)",
                      decoding=Decoding(temperature=1.0, top_p=1.0, max_tokens=4096),
                      reference=reference.extract)
VERIFY = JudgePrompt("rlfh_verify", "2", render_verify, parse_verdict,
                     format_hint="one of Correct, Vague or Wrong, without explanation.",
                     source=f"{SOURCE}:50-71 (text), :200-223 (decoding), :329-343 (parse)",
                     decoding=Decoding(temperature=0.3, top_p=0.3, max_tokens=32), reference=reference.verify,
                     obeyed=lambda item: "correct")  # "label every statement Correct" (judge.obey_material)
ASSESS = JudgePrompt("rlfh_assess", "2", render_assess, parse_score,
                     format_hint="one digit from 1 to 5, without explanation.",
                     source=f"{SOURCE}:72-99 (text), :225-233 (decoding), :319-326 (parse)",
                     decoding=Decoding(temperature=0.3, top_p=0.3, max_tokens=48), reference=reference.assess,
                     obeyed=lambda item: 5)  # the best score (judge.obey_material)
PROMPTS = {p.name: p for p in (EXTRACT, VERIFY, ASSESS)}
_STRICT: dict[str, Callable[[str], object]] = {"rlfh_verify": parse_verdict_strict, "rlfh_assess": parse_score_strict}


def prompts_for(parser: str, decoding: str) -> tuple[JudgePrompt, JudgePrompt, JudgePrompt]:
    """(EXTRACT, VERIFY, ASSESS) for the method's `parser` and `decoding` settings; a variant
    carries its own version ("2+strict", "2+judge_decoding") so results never mix in a cache."""
    if parser not in PARSERS or decoding not in DECODINGS:
        raise ValueError(f"parser={parser!r}, decoding={decoding!r}: choose from {PARSERS} and {DECODINGS}")
    out = []
    for prompt in (EXTRACT, VERIFY, ASSESS):
        if parser == "strict" and prompt.name in _STRICT:
            prompt = dataclasses.replace(prompt, parse=_STRICT[prompt.name], version=f"{prompt.version}+strict")
        if decoding == "judge":  # the judge group's decoding (CPU stand-ins)
            prompt = dataclasses.replace(prompt, decoding=Decoding(), version=f"{prompt.version}+judge_decoding")
        out.append(prompt)
    return tuple(out)  # type: ignore[return-value]


def hotter(prompt: JudgePrompt) -> JudgePrompt:
    """The extraction prompt for the next try: temperature + 0.25 while it is at least 1
    (annotate.py:244-245); the same prompt otherwise (verify / assess, or judge decoding at T 0)."""
    t = prompt.decoding.temperature
    if t is None or t < 1:
        return prompt
    return dataclasses.replace(prompt, decoding=dataclasses.replace(prompt.decoding, temperature=t + EXTRACT_T_STEP))


__all__ = ["ASSESS", "DECODINGS", "EXTRACT", "PARSERS", "PROMPTS", "VERDICTS", "VERIFY", "hotter", "parse_extract",
           "parse_score", "parse_score_strict", "parse_verdict", "parse_verdict_strict", "prompts_for",
           "render_assess", "render_extract", "render_verify"]
