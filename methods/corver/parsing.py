"""The extractor prompt and the parser of its replies, both as CorVer's released code has them.

Prompt: the QuCo-RAG prompt, verbatim (quco_prompt.py; shichengf/CorVer@f3cadc2
train/corver_reward/prompt_templates.json:2).

Parser: the reply is read as the released extractor reads it (train/corver_reward/
entity_extractor.py:278-288 and its `parse_case`, :20-122): strip; drop one leading
"entities:"; then one pass over the characters, outside quotes:
- `[` opens a list inside the innermost open one; `]` ends the current item and closes the list;
- `,` ends the current item, except inside an inner list that already has two items: there it
  is kept as text, so "Mumbai, Maharashtra, India" stays one tail;
- `"` and the curly `\u201c` open a quoted item (closed by `"` / `\u201d`; a backslash escapes the
  next character); any whitespace run becomes one space per character, leading space dropped;
- any other character (text before the first `[` included) is item text.
The result is the last top-level list closed (or the first one opened, if none closed); text
outside a list is dropped; a `]` that closes nothing while an item is pending makes the whole
reply unreadable (the release raises there and scores the sentence with no triples).
One guard of ours: brackets nested deeper than `MAX_DEPTH` (64) are read as text (the release
nests on), so a degenerate reply cannot make a structure too deep to print; only the relation of
a triple could hold one, and the reward never reads it under the paper's First rule.

`parse_triples` returns the top-level items that are lists, each as parsed (strings, or lists for
deeper nesting): the released reward skips any other item (train/sentence_reward.py:325).
Whether a triple is valid (three items, head and tail non-empty strings, no pronoun) is the
sentence reward's decision (reward.py), not the parser's.
"""
from __future__ import annotations

from typing import Any

from .quco_prompt import fill

PROMPT_VERSION = "2"  # 2: the released QuCo-RAG prompt and parser (1: a prompt of the harness's own)

_QUOTES = {'"': '"', "\u201c": "\u201d"}  # opening quote -> the quote that closes it
MAX_DEPTH = 64
_LABEL = "entities:"


def build_prompt(sentence: str) -> str:
    """The user message for one sentence (the released prompt, filled as released)."""
    return fill(sentence)


class Unreadable(Exception):
    """A `]` with nothing open while an item is pending (the release's parse raises)."""


def read_lists(text: str) -> list:
    """The nested list in an extractor reply, read by the rules in the module docstring."""
    text = text.strip()
    if not text:
        return []
    stack: list[list] = []  # the open lists, outermost first
    item: list[str] = []  # characters of the item being read
    closing: str | None = None  # the quote that ends the quoted part being read, else None
    escaped = False
    result: list | None = None
    deep = 0  # brackets opened beyond MAX_DEPTH, kept as text

    def take_item() -> str:
        word = "".join(item).strip()
        item.clear()
        return word

    for ch in text:
        if closing is not None:  # inside quotes: everything is text until the closing quote
            if escaped:
                item.append(ch)
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == closing:
                closing = None
            else:
                item.append(ch)
        elif ch in _QUOTES:
            closing = _QUOTES[ch]
        elif (deep and ch in "[]") or (ch == "[" and len(stack) >= MAX_DEPTH):
            deep += 1 if ch == "[" else -1
            item.append(ch)
        elif ch == "[":
            opened: list = []
            if stack:
                stack[-1].append(opened)
            stack.append(opened)
            if result is None:
                result = stack[0]
        elif ch == "]":
            word = take_item()
            if word:
                if not stack:
                    raise Unreadable
                stack[-1].append(word)
            if stack:
                done = stack.pop()
                if not stack:
                    result = done
        elif ch == ",":
            if len(stack) >= 2 and len(stack[-1]) >= 2 and item:
                item.append(ch)  # a comma inside the third element (a tail such as "Paris, France")
            else:
                word = take_item()
                if word and stack:
                    stack[-1].append(word)
        elif ch.isspace():
            if item:
                item.append(" ")
        else:
            item.append(ch)
    if stack:  # cut off (e.g. by the token limit): keep what was read
        word = take_item()
        if word:
            stack[-1].append(word)
    return result or []


def parse_triples(text: Any) -> list[list]:
    """The triple candidates in an extractor reply: the top-level lists, [] when unreadable."""
    if not isinstance(text, str):
        return []
    text = text.strip()
    if text.startswith(_LABEL):  # the model sometimes echoes the prompt's last line
        text = text.replace(_LABEL, "", 1).strip()
    try:
        value = read_lists(text)
    except Unreadable:
        return []
    return [item for item in value if isinstance(item, list)]


__all__ = ["PROMPT_VERSION", "Unreadable", "build_prompt", "parse_triples", "read_lists"]
