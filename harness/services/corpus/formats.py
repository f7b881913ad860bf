"""Index format versions: what each one changed, and whether an older index still counts right.

- "1" (first release): each document tokenised as a standalone string. Byte-level BPE
  tokenizers (SmolLM2, Qwen, Llama-3) write no word-boundary mark on a string's first word,
  so "Madagascar is an island ..." was stored as `Madagascar`, while a query looks for the
  running-text form `ĠMadagascar`: no query found the first word of any document, which in
  Wikipedia lead sections is their subject. SentencePiece (Llama-2, the paper's
  index) marks the first word itself (`▁Madagascar`), so its format-1 indexes hold exactly
  the ids format 2 writes.
- "2": documents tokenised as running text (tokens.encode_documents): the manifest's
  `document_prefix` (" " for tokenizers that do not mark first words, "" otherwise) goes
  before each document that does not start with whitespace.

Opening a format-1 index with a byte-level tokenizer is refused with the command that
rebuilds it; with a SentencePiece tokenizer it is allowed with a warning.
"""
from __future__ import annotations

import logging
import shlex
from typing import Any

from ...core.errors import HarnessError
from .tokens import marks_first_word

log = logging.getLogger(__name__)

FORMAT_VERSION = "2"
KNOWN_FORMATS = ("1", "2")


def rebuild_command(manifest: dict[str, Any], index_dir: Any) -> str:
    """The `harness index build` command that rebuilds this index in the current format."""
    corpus = manifest.get("corpus") or {}
    tokenizer = (manifest.get("tokenizer") or {}).get("spec") or "TOKENIZER"
    if corpus.get("kind") == "demo":
        args = ["--demo"]
    else:
        args = [str(entry.get("path")) for entry in corpus.get("inputs") or []] or ["INPUTS"]
    args += ["--out", str(index_dir), "--tokenizer", str(tokenizer)]
    if corpus.get("text_field") not in (None, "text"):
        args += ["--text-field", str(corpus["text_field"])]
    if corpus.get("split_lines"):
        args.append("--split-lines")
    return "harness index build " + " ".join(shlex.quote(a) for a in args) + " --force"


def check_format(manifest: dict[str, Any] | None, index_dir: Any, tokenizer: Any) -> None:
    """Raise HarnessError when the index's format makes counts wrong for `tokenizer` (the
    index's own, fingerprint already checked); log a warning when it is old but still right.
    Indexes without a manifest (built elsewhere) are not judged."""
    if manifest is None:
        return
    version = str(manifest.get("format_version"))
    if version == FORMAT_VERSION:
        return
    if version not in KNOWN_FORMATS:
        raise HarnessError(f"index {index_dir}: format {version!r} is newer than this harness reads "
                           f"({FORMAT_VERSION}); update factrl-harness or rebuild: "
                           f"{rebuild_command(manifest, index_dir)}")
    if marks_first_word(tokenizer):
        log.warning("index %s: format %s (current %s); its SentencePiece ids are unchanged, so counts are right, "
                    "but rebuild it when convenient: %s", index_dir, version, FORMAT_VERSION,
                    rebuild_command(manifest, index_dir))
        return
    raise HarnessError(f"index {index_dir}: format {version} stored the first word of every document without its "
                       f"word-boundary mark, so this byte-level tokenizer's queries never find it; rebuild it: "
                       f"{rebuild_command(manifest, index_dir)}")
