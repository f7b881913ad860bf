"""The two claim extractors of FActScore-NPM (`eval.factscore_options.claims`), as judge prompts.

- `breakdown_prompt(demos)` ("factscore_breakdown" 1, `claims: factscore`): FActScore's
  per-sentence few-shot prompt (shmsw25/FActScore@f28272d factscore/atomic_facts.py:96-127):
  for each of the first 7 demos and then the BM25-nearest demo (BM25Okapi over the demo
  sentences split on " ", rank-bm25's `get_top_n`, :29-30, :146-149), the line "Please breakdown
  the following sentence into independent facts: <demo>" and "- <fact>" per fact, a blank line;
  then the same line for the sentence; the whole prompt stripped (lm.py:18). Item {sentence};
  value: the facts. Reply parsed as `text_to_sentences` (:155-163): the parts after each "- ",
  stripped, a "." added to the last one when it has none, no "- " -> no facts; an empty last
  part (FActScore's IndexError) is unreadable. Decoding as released: T 0.7, 512 tokens
  (openai_lm.py:14, 42), cached per prompt as FActScore caches it (lm.py:18-19).
- `VERBATIM_CLAIMS` ("verbatim_claims" 2, `claims: verbatim`): the extractor the CorVer paper
  describes (§A.2: "A Qwen3 extractor produces verbatim atomic claims at temperature 0 with
  thinking disabled; exact duplicates are removed"). Its prompt is unpublished: this text is
  the harness's. Item {text} (the whole reasoning); value: the claims, exact duplicates removed.
  T 0, thinking off (`Decoding.enable_thinking=False`: the request carries chat_template_kwargs
  {enable_thinking: false} where the server takes it; version 2). Structured replies: {"claims": [str]}.
Model output enters both only through `material()` (docs/CONTRACTS.md, "Judge prompts, version
2"), with the material rule stated once above FActScore's own words.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from factrl.harness.services.judge import MATERIAL_RULE, Decoding, JudgePrompt, ParseError, material

from .demos import FIXED, NEAREST

BREAKDOWN_LINE = "Please breakdown the following sentence into independent facts: {}\n"  # atomic_facts.py:115
FACT_LINE = "- {}\n"  # atomic_facts.py:117
BREAKDOWN_SOURCE = "shmsw25/FActScore@f28272d factscore/atomic_facts.py:96-163"


def _demo_block(sentence: str, facts: list[str]) -> str:
    return BREAKDOWN_LINE.format(sentence) + "".join(FACT_LINE.format(f) for f in facts) + "\n"


def parse_breakdown(text: str) -> list[str]:
    """FActScore's `text_to_sentences`; its IndexError (an empty last fact) is a ParseError."""
    parts = [part.strip() for part in str(text).split("- ")[1:]]
    if not parts:
        return []
    if not parts[-1]:
        raise ParseError("the last '- ' line is empty")
    if not parts[-1].endswith("."):
        parts[-1] += "."
    return parts


@lru_cache(maxsize=4)
def _breakdown(demo_items: tuple[tuple[str, tuple[str, ...]], ...]) -> JudgePrompt:
    from rank_bm25 import BM25Okapi

    demos = {sentence: list(facts) for sentence, facts in demo_items}
    keys = list(demos)
    fixed = "".join(_demo_block(k, demos[k]) for k in keys[:FIXED])
    index = BM25Okapi([k.split(" ") for k in keys])

    def render(item: dict) -> list[dict[str, str]]:
        sentence = str(item["sentence"])
        nearest = index.get_top_n(sentence.split(" "), keys, NEAREST)
        prompt = fixed + "".join(_demo_block(k, demos[k]) for k in nearest) + BREAKDOWN_LINE.format(material(sentence))
        return [{"role": "user", "content": MATERIAL_RULE + "\n\n" + prompt.strip()}]

    return JudgePrompt("factscore_breakdown", "1", render, parse_breakdown,
                       format_hint='one fact per line, each line starting with "- ".', source=BREAKDOWN_SOURCE,
                       decoding=Decoding(temperature=0.7, max_tokens=512), cache_sampled=True,
                       reference=lambda item, tools: tools.claims(str(item["sentence"])))


def breakdown_prompt(demos: dict[str, list[str]]) -> JudgePrompt:
    """FActScore's per-sentence prompt over these demos (memoised per demo set)."""
    return _breakdown(tuple((k, tuple(v)) for k, v in demos.items()))


# -- verbatim claims (CorVer §A.2) -------------------------------------------------------------

_VERBATIM_TEXT = """{rule}

List the atomic claims that the text below states, each copied word for word from it.

An atomic claim is the shortest stretch of the text that states one checkable fact. Copy it \
exactly as it is written: the same words, spelling and punctuation, with nothing rephrased, \
no pronoun replaced, nothing merged or added. Leave out questions, opinions, hedges, plans and \
filler. Do not judge whether a claim is true.

Text:
{text}

Reply with one claim per line, each line starting with "- ". If the text states no factual \
claim, reply with the single word NONE."""

_SCHEMA = {"type": "object", "properties": {"claims": {"type": "array", "items": {"type": "string"}}},
           "required": ["claims"], "additionalProperties": False}


def _unique(claims: list[str]) -> list[str]:
    return list(dict.fromkeys(c.strip() for c in claims if c and c.strip()))  # exact duplicates removed


def parse_verbatim(text: str) -> list[str]:
    """The "- " lines (one header line ending in ":" allowed first), or [] for a lone NONE."""
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    if not lines:
        raise ParseError("empty reply")
    if len(lines) == 1 and lines[0].rstrip(".").upper() == "NONE":
        return []
    for number, line in enumerate(lines):
        if not line.startswith("- ") and not (number == 0 and line.endswith(":") and len(lines) > 1):
            raise ParseError(f"line {number + 1} is not a '- ' claim: {line[:60]!r}")
    return _unique([line[2:] for line in lines if line.startswith("- ")])


def parse_verbatim_json(obj: Any) -> list[str]:
    claims = obj.get("claims") if isinstance(obj, dict) else None
    if not isinstance(claims, list) or not all(isinstance(c, str) for c in claims):
        raise ParseError("expected {\"claims\": [string, ...]}")
    return _unique(claims)


def _render_verbatim(item: dict) -> list[dict[str, str]]:
    return [{"role": "user", "content": _VERBATIM_TEXT.format(rule=MATERIAL_RULE,
                                                              text=material(str(item["text"]), label="text"))}]


VERBATIM_CLAIMS = JudgePrompt(
    "verbatim_claims", "2", _render_verbatim, parse_verbatim,
    format_hint='one claim per line starting with "- ", copied word for word, or the single word NONE.',
    source="harness design (CorVer paper §A.2 describes the extractor; its prompt is unpublished)",
    decoding=Decoding(temperature=0.0, enable_thinking=False), schema=_SCHEMA, parse_json=parse_verbatim_json,
    reference=lambda item, tools: _unique(tools.claims(str(item["text"]))))
