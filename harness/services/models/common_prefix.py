"""A batch's common prompt prefix prefilled once, every row continuing from a copy of its cache.

Evaluation prompts share most of their tokens: the chat template, the system prompt and the
few-shot turn come before the question (on the demo set, 105 of the 124 tokens of an average
prompt). A left-padded batch prefills all of them for every row; the prefill is compute-bound, so
on the CPU it was ~40% of a demo evaluation. Here the tokens every row starts with run once, on
one row, and the batch is laid out with its padding after them instead of before:

    left-padded:    [pad pad][prefix][question a]        each row's positions 0..n-1 on its tokens
    middle-padded:  [prefix][pad pad][question a]        the same positions, the same visible keys

`model.generate(input_ids=ids, attention_mask=mask, past_key_values=cache)` then prefills only the
padding and the questions (the cache holds the prefix) and counts positions from the mask's
cumulative sum (transformers' `_prepare_position_ids_for_generation`), so each real token sees the
same keys at the same positions as in the left-padded batch: the logits are equal up to float
rounding (the attention and the matmuls run in other blocks), and greedy tokens are the same
wherever no two logits sit within rounding of each other (tests/evals/test_common_prefix.py).

Used only where that holds: a plain full-attention DynamicCache in every layer (no sliding window,
no static or quantized cache, none named by the model's generation config) and at least two rows
sharing a prefix of `minimum` tokens.
"""
from __future__ import annotations

import os
from typing import Any, Sequence

import torch


def full_attention_cache(config: Any):
    """An empty DynamicCache for `config`, or None when a layer is not plain full attention."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    cache = DynamicCache(config=config)
    if not cache.layers or not all(type(layer) is DynamicLayer for layer in cache.layers):
        return None
    return cache


def shared_length(rows: Sequence[Sequence[int]], minimum: int = 16) -> int:
    """The number of leading tokens every row has in common, leaving each row at least one token of
    its own (generate needs an uncached token to predict from); 0 when that is under `minimum` or
    there are fewer than two rows."""
    if len(rows) < 2:
        return 0
    length = min(len(os.path.commonprefix([list(r) for r in rows])), min(len(r) for r in rows) - 1)
    return length if length >= max(1, int(minimum)) else 0


def middle_padded(rows: Sequence[Sequence[int]], prefix: int, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, mask), both (B, W) with W the longest row: each row's first `prefix` tokens, then its
    padding, then the rest of the row."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), int(pad_id), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        start = prefix + width - len(row)
        ids[i, :prefix] = torch.as_tensor(row[:prefix])
        ids[i, start:] = torch.as_tensor(row[prefix:])
        mask[i, :prefix] = 1
        mask[i, start:] = 1
    return ids, mask


def prefix_cache(model: Any, ids: torch.Tensor, prefix: int) -> Any:
    """The key/value cache of `ids[0, :prefix]`, computed once and repeated to the batch's rows;
    None where the model's layers are not all plain full attention. In: ids (B, W) from
    `middle_padded`; run under the caller's no-grad / inference mode and adapter."""
    cache = full_attention_cache(getattr(model, "config", None))
    if cache is None:
        return None
    model(input_ids=ids[:1, :prefix], attention_mask=torch.ones_like(ids[:1, :prefix]), past_key_values=cache,
          use_cache=True, logits_to_keep=1)
    if cache.get_seq_length() != prefix:  # the model did not fill the cache it was given
        return None
    cache.batch_repeat_interleave(ids.size(0))
    return cache


def shared_prefix_inputs(model: Any, rows: Sequence[Sequence[int]], pad_id: int, minimum: int = 16
                         ) -> dict[str, Any] | None:
    """`generate` keyword arguments (input_ids, attention_mask, past_key_values) for the rows with
    their common prefix prefilled (its length: the cache's `get_seq_length()`); None when there is
    none to share or the model's generation config names a cache of its own (static, ...), which
    generate would not combine with this one (the caller pads to the left as before)."""
    prefix = shared_length(rows, minimum)
    if not prefix or getattr(getattr(model, "generation_config", None), "cache_implementation", None):
        return None
    ids, mask = middle_padded(rows, prefix, pad_id)
    device = next(model.parameters()).device
    ids, mask = ids.to(device), mask.to(device)
    cache = prefix_cache(model, ids, prefix)
    if cache is None:
        return None
    return {"input_ids": ids, "attention_mask": mask, "past_key_values": cache}
