"""The extractor prompt and a tolerant parser for its output.

The QuCo extractor was fine-tuned to answer a block that ends `Sentence:\\n<s>\\nentities:\\n`
with a list of triples `[["head", "relation", "tail"], ...]`, or `[]` when the sentence
states no fact about an entity. The instruction and examples below are ours; only that
input/output shape follows the checkpoint.

Model output is messy: quoted or unquoted items, single or curly quotes, a label or a code
fence around the list, trailing chatter, a list cut off by the token limit. `parse_triples`
never raises and always returns a list of lists of strings; whether a triple is *valid*
(three elements, no pronouns, ...) is the sentence reward's decision, not the parser's.
"""
from __future__ import annotations

import json
from typing import Any

PROMPT_VERSION = "1"

INSTRUCTION = (
    "List the knowledge triples stated in the sentence below. A triple is "
    "[subject, relation, object]: the subject and object are named things (people, places, "
    "works, organisations, dates, numbers), the relation is the short phrase linking them. "
    "Write one triple per fact, in the order the facts appear, as a JSON list of lists of "
    "strings. Copy names as they are written. Write [] when the sentence states no fact "
    "about a named thing (opinions, plans, restatements of the question, vague remarks)."
)

# (sentence, triples) pairs written for this harness; they cover one fact, several facts,
# a date, a comma inside a name, and sentences with nothing to extract.
EXAMPLES: tuple[tuple[str, list[list[str]]], ...] = (
    ("The Eiffel Tower was designed by the engineering firm of Gustave Eiffel.",
     [["Eiffel Tower", "designed by", "Gustave Eiffel"]]),
    ("Marie Curie was born in Warsaw and later moved to Paris.",
     [["Marie Curie", "place of birth", "Warsaw"], ["Marie Curie", "moved to", "Paris"]]),
    ("Let me think about which river is the longest.", []),
    ("The novel Things Fall Apart was published in 1958.",
     [["Things Fall Apart", "published in", "1958"]]),
    ("Sacramento is the capital of California, United States.",
     [["Sacramento", "capital of", "California, United States"]]),
    ("So the answer should be the second one.", []),
    ("Apollo 11 landed on the Moon in July 1969, commanded by Neil Armstrong.",
     [["Apollo 11", "landed on", "Moon"], ["Apollo 11", "date", "July 1969"],
      ["Apollo 11", "commander", "Neil Armstrong"]]),
)


def format_block(sentence: str) -> str:
    return f"Sentence:\n{sentence}\nentities:\n"


def build_prompt(sentence: str) -> str:
    """The user message for one sentence: instruction, worked examples, then the task."""
    shots = "\n".join(
        f"Example {i}:\n{format_block(s)}{json.dumps(t, ensure_ascii=False)}\n"
        for i, (s, t) in enumerate(EXAMPLES, 1)
    )
    return f"{INSTRUCTION}\n\n{shots}\nNow the task:\n{format_block(sentence)}"


# --------------------------------------------------------------------------- parsing
_OPEN_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "\u201d": "\u201d"}
_MAX_DEPTH = 8  # deeper nesting is noise; stop descending instead of recursing


def _strip_wrapping(text: str) -> str:
    text = text.strip()
    if text.startswith("```"):  # a code fence, possibly with a language tag
        text = text[3:]
        newline = text.find("\n")
        if newline >= 0 and text[:newline].strip().isalpha():
            text = text[newline + 1:]
        text = text.split("```", 1)[0]
    return text


def _balanced_span(text: str, start: int) -> str:
    """text[start:] up to the bracket that closes text[start] (quotes respected), or the end."""
    depth, quote, escape = 0, None, False
    for i in range(start, len(text)):
        ch = text[i]
        if quote is not None:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == quote:
                quote = None
            continue
        if ch == '"':
            quote = '"'
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return text[start:]


class _Item(str):
    """A parsed list item that remembers whether it was quoted."""

    quoted: bool = False


def _scan(span: str) -> list:
    """A forgiving reader of nested bracket lists with quoted or bare items."""
    root: list = []
    stack: list[list] = []
    buf: list[str] = []
    pending_quoted: str | None = None
    skipped = 0  # brackets opened beyond _MAX_DEPTH, whose closers must not pop a real list
    i = 0

    def flush() -> None:
        nonlocal pending_quoted
        if not stack:
            buf.clear()
            pending_quoted = None
            return
        if pending_quoted is not None:
            item = _Item(pending_quoted)
            item.quoted = True
            stack[-1].append(item)
        else:
            bare = "".join(buf).strip()
            if bare:
                stack[-1].append(_Item(bare))
        buf.clear()
        pending_quoted = None

    while i < len(span):
        ch = span[i]
        at_item_start = not "".join(buf).strip() and pending_quoted is None
        if ch in _OPEN_QUOTES and at_item_start and stack:
            close = _OPEN_QUOTES[ch]
            j, out = i + 1, []
            while j < len(span):
                if span[j] == "\\" and j + 1 < len(span):
                    out.append(span[j + 1])
                    j += 2
                    continue
                if span[j] == close or (close == "\u201d" and span[j] == '"'):
                    break
                out.append(span[j])
                j += 1
            pending_quoted = "".join(out)
            buf.clear()
            i = j + 1
            continue
        if ch == "[":
            if len(stack) >= _MAX_DEPTH:
                skipped += 1
                i += 1
                continue
            new: list = []
            (stack[-1] if stack else root).append(new)
            stack.append(new)
            buf.clear()
        elif ch == "]" and skipped:
            skipped -= 1
        elif ch == "]":
            flush()
            if stack:
                stack.pop()
            if not stack:
                break
        elif ch == ",":
            flush()
        elif pending_quoted is None:
            buf.append(ch)
        i += 1
    flush()
    return root[0] if root else []


def _as_triple(value: Any) -> list[str] | None:
    if not isinstance(value, list):
        return None
    items = [v for v in value if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
    if len(items) != len(value) or not items:
        return None
    out = [str(v).strip() for v in items]
    bare = all(isinstance(v, _Item) and not v.quoted for v in items)
    if bare and len(out) > 3:
        # Unquoted, a comma inside a name is ambiguous; a triple has three parts, so the
        # extra commas belong to the object ("Sacramento, capital of, California, USA").
        out = out[:2] + [", ".join(out[2:])]
    return out


def _normalise(value: Any) -> list[list[str]]:
    if not isinstance(value, list) or not value:
        return []
    if all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        triple = _as_triple(value)  # a single flat triple without the outer list
        return [triple] if triple else []
    return [t for t in (_as_triple(v) for v in value) if t is not None]


def parse_triples(text: Any) -> list[list[str]]:
    """Triples in an extractor's output; [] for anything without a readable list. Never raises."""
    if not isinstance(text, str):
        return []
    text = _strip_wrapping(text)
    start = text.find("[")
    if start < 0:
        return []
    span = _balanced_span(text, start)
    try:
        # Numbers keep the text the model wrote ("0e0" stays "0e0", not "0.0").
        value = json.loads(span, parse_int=str, parse_float=str, parse_constant=str)
    except (ValueError, RecursionError):
        try:
            value = _scan(span)
        except RecursionError:  # pragma: no cover - _scan is iterative; belt and braces
            return []
    return _normalise(value)


__all__ = ["EXAMPLES", "INSTRUCTION", "PROMPT_VERSION", "build_prompt", "format_block", "parse_triples"]
