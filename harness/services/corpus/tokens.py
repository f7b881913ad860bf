"""Index tokenizers: resolution offline, a fingerprint, and words as token ids.

The index stores token ids, so a query word must be tokenised exactly as the index's
tokenizer wrote it inside running text. `TermEncoder` encodes "<anchor> <word>" and drops
the anchor's tokens, which gives the word-initial form for both tokenizer families we use
(GPT-2-style BPE: "ĠParis"; SentencePiece: "▁Paris") without special-casing either.
A change to that rule is a change of query construction: bump query.QUERY_VERSION.

Documents are stored the same way (index format 2, see formats.py): byte-level BPE writes
no boundary mark on a string's first word ("Paris" alone, "ĠParis" after a space), so a
document is encoded after a space when the tokenizer does not mark first words itself;
SentencePiece does ("▁Paris" alone too) and its documents are encoded as they are.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ...core.errors import ConfigError, ModelNotFoundError

# A text whose token ids enter the fingerprint: the vocabulary alone misses normaliser and
# pre-tokeniser changes, the probe catches them.
_PROBE_TEXT = "Paris is the capital of France. 1950 Zürich naïve «quoted» O'Brien U.S.\ttab\nline"
_ANCHOR = "x"
# Words whose ids alone and after a space tell the two tokenizer families apart.
_FIRST_WORD_PROBES = ("Paris", "The")
# The term-id memo is bounded; the reward's vocabulary of entity words is far smaller.
_MEMO_LIMIT = 200_000


@dataclass(frozen=True)
class TokenizerIdentity:
    """What an index records about its tokenizer, and what a query side must match."""

    spec: str  # what the user gave: a model config name, a local path or a hub id
    name_or_path: str
    cls: str
    vocab_size: int  # len(tokenizer): base vocabulary plus added tokens
    eos_token_id: int
    fingerprint: str  # sha256 of the vocabulary and of the probe text's ids

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _model_config(name: str) -> Any | None:
    """A model option of configs/model/ read as YAML (Hydra is not needed, and composing
    inside a running Hydra app would fail: GlobalHydra is already initialised), parsed."""
    from ..models.settings import ModelSettings
    from ...core.settings import defaults_from_yaml

    path = resources.files("factrl.configs").joinpath("model", f"{name}.yaml")
    if not path.is_file():
        return None
    return ModelSettings.of(defaults_from_yaml(f"model/{name}.yaml"))


def load_index_tokenizer(spec: str):
    """Tokenizer for `spec`: a model config name (embedded models load offline), a local
    directory, or a hub id (from the local Hugging Face cache, or downloaded when online)."""
    from transformers import AutoTokenizer

    spec = str(spec or "").strip()
    if not spec or spec == "???":
        raise ConfigError("corpus.tokenizer is not set: give a model config name (smollm2-135m), "
                          "a local tokenizer directory or a hub id.")
    model_cfg = _model_config(spec)
    if model_cfg is not None:
        if model_cfg.source == "embedded" or model_cfg.path:
            from ..models import load_tokenizer, resolve

            return load_tokenizer(resolve(model_cfg))
        spec = str(model_cfg.id)
    local = Path(os.path.expanduser(spec))
    if local.exists():
        if not local.is_dir():
            raise ConfigError(f"tokenizer {spec}: not a directory; give a folder with tokenizer.json "
                              f"or tokenizer.model and tokenizer_config.json.")
        try:
            return AutoTokenizer.from_pretrained(str(local))
        except Exception as err:  # noqa: BLE001 - transformers raises many types here
            raise ModelNotFoundError(f"tokenizer {spec}: cannot load it ({type(err).__name__}: {err}).") from None
    try:
        return AutoTokenizer.from_pretrained(spec)
    except Exception as err:  # noqa: BLE001
        raise ModelNotFoundError(
            f"tokenizer {spec!r} is neither a model config name, a local directory nor a hub id in the "
            f"local Hugging Face cache ({type(err).__name__}). Fetch it on a connected machine with "
            f"`huggingface-cli download {spec} --include 'tokenizer*'`, or pass a local directory."
        ) from None


def encode_texts(tokenizer, texts: list[str]) -> list[list[int]]:
    """Token ids of documents, without special tokens; special-token strings in the text
    stay text, so corpus and queries agree on them."""
    return tokenizer(texts, add_special_tokens=False, split_special_tokens=True)["input_ids"]


def _mid_text_ids(tokenizer, anchor: tuple[int, ...], word: str) -> tuple[int, ...]:
    """Ids of `word` where it follows a space inside running text: "<anchor> <word>" minus
    the anchor's ids, or " <word>" when the anchor merged with the word."""
    ids = tuple(encode_texts(tokenizer, [f"{_ANCHOR} {word}"])[0])
    if ids[: len(anchor)] == anchor:
        return ids[len(anchor):]
    return tuple(encode_texts(tokenizer, [f" {word}"])[0])


def marks_first_word(tokenizer) -> bool:
    """Whether the tokenizer gives a string's first word the ids it has after a space in
    running text: SentencePiece's dummy prefix does ("▁Paris" both ways); byte-level BPE
    does not ("Paris" first, "ĠParis" after a space). Word-level tokenizers have no
    boundary mark and count as marking."""
    anchor = tuple(encode_texts(tokenizer, [_ANCHOR])[0])
    return all(tuple(encode_texts(tokenizer, [word])[0]) == _mid_text_ids(tokenizer, anchor, word)
               for word in _FIRST_WORD_PROBES)


def document_prefix(tokenizer) -> str:
    """What goes before a document so that it is tokenised as running text: " " for
    tokenizers that do not mark first words, "" otherwise (recorded in the manifest)."""
    return "" if marks_first_word(tokenizer) else " "


def encode_documents(tokenizer, texts: list[str], prefix: str) -> list[list[int]]:
    """Token ids of documents as running text: `prefix` goes before each text that does not
    start with whitespace (a leading newline or space is a boundary of its own, as it is
    mid-text). With prefix "" this is exactly `encode_texts` (index format 1)."""
    if prefix:
        texts = [text if text[:1].isspace() else prefix + text for text in texts]
    return encode_texts(tokenizer, texts)


def identify(tokenizer, spec: str) -> TokenizerIdentity:
    digest = hashlib.sha256()
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    digest.update(json.dumps(vocab, ensure_ascii=False).encode())
    digest.update(json.dumps(encode_texts(tokenizer, [_PROBE_TEXT])[0]).encode())
    eos = tokenizer.eos_token_id
    return TokenizerIdentity(
        spec=str(spec),
        name_or_path=str(getattr(tokenizer, "name_or_path", "")),
        cls=type(tokenizer).__name__,
        vocab_size=len(tokenizer),
        eos_token_id=int(eos) if eos is not None else 0,
        fingerprint=digest.hexdigest(),
    )


def token_dtype_for(vocab_size: int) -> str:
    """u16 while every id fits below the document separator 0xFFFF, else u32."""
    return "u16" if vocab_size <= 0xFFFF else "u32"


class TermEncoder:
    """Words and phrases as the token ids the index holds for them in running text.

    `encode(word)` returns a tuple of ids, or None when the word cannot occur in the index:
    it contains the tokenizer's unknown or special tokens, or an id the index cannot store.
    A None term counts as zero; it never becomes an UNK id that would match every unknown
    word of the corpus.
    """

    def __init__(self, tokenizer, max_id: int):
        self.tokenizer = tokenizer
        self.max_id = max_id  # the largest storable id; the separator is max_id + 1
        self._special = set(getattr(tokenizer, "all_special_ids", []) or [])
        self._anchor = tuple(encode_texts(tokenizer, [_ANCHOR])[0])
        self._space_only: dict[int, bool] = {}
        self._memo: dict[str, tuple[int, ...] | None] = {}

    def _is_space_token(self, token_id: int) -> bool:
        """A token that is only a word boundary: "▁" (SentencePiece), "Ġ" (byte-level BPE),
        or anything that decodes to whitespace. SentencePiece decodes "▁" alone to "", so
        the token string is checked as well as the decoded text."""
        known = self._space_only.get(token_id)
        if known is None:
            piece = self.tokenizer.convert_ids_to_tokens(token_id) or ""
            text = self.tokenizer.decode([token_id], clean_up_tokenization_spaces=False)
            known = (bool(piece) and not piece.strip("▁Ġ \t")) or (bool(text) and not text.strip())
            self._space_only[token_id] = known
        return known

    def _encode_uncached(self, word: str) -> tuple[int, ...] | None:
        ids = _mid_text_ids(self.tokenizer, self._anchor, word)
        # A word that starts with a character without a word-initial token (digits, some
        # symbols) is written as a lone boundary token plus the rest. The CorVer reference
        # drops that lone token, so "1950" also matches "(1950)"; we do the same.
        while len(ids) > 1 and self._is_space_token(ids[0]):
            ids = ids[1:]
        if not ids or any(i in self._special or i < 0 or i > self.max_id for i in ids):
            return None
        return ids

    def encode(self, word: str) -> tuple[int, ...] | None:
        try:
            return self._memo[word]
        except KeyError:
            pass
        ids = self._encode_uncached(word)
        if len(self._memo) >= _MEMO_LIMIT:
            self._memo.clear()
        self._memo[word] = ids
        return ids
