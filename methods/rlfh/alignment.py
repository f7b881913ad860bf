"""The response RLFH judges, aligned to its tokens by the core (harness.core.completions).

Two differences from `completions.align`, both because RLFH judges the whole response the
policy wrote (it has no tag format of its own):
- the model's response prefix (e.g. SmolLM2's "<think>", which the prompt already ends with)
  is put back in front before sections are found, so a reasoning cut at the length limit
  without its closing tag is still a think section; the prefix's own tokens are then dropped;
- a completion with no think or answer tag at all is read whole, as one section
  ("response"), instead of having no sentences.
Token spans and sigma are the core's (character offsets, docs/PROTOCOL.md §1), so placement never sums
per-token decodes.
"""
from __future__ import annotations

from typing import Any, Sequence

from factrl.harness.core import completions as comp


def align_response(tokenizer: Any, ids: Sequence[int], *, prefix_ids: Sequence[int] = (),
                   splitter: str) -> comp.Alignment:
    """Alignment whose sigma / spans cover `ids` only (spans index into the text with prefix)."""
    n = len(prefix_ids)
    text, spans, used = comp.token_spans(tokenizer, [*prefix_ids, *ids])
    sections = comp.find_sections(text)
    if not sections:
        start = len(comp.token_spans(tokenizer, list(prefix_ids))[0]) if n else 0
        sections = [comp.Section("response", start, len(text), False)]
    sentences = comp.sentences_of(text, sections, splitter=splitter)
    sigma, inside, aligned = comp.sigma_from_spans(spans[n:], sentences, sections)
    return comp.Alignment(text, sections, sentences, sigma, list(spans[n:]), used, inside, aligned)


__all__ = ["align_response"]
