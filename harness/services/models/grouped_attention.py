"""Grouped-query attention without copying the keys and values (CPU decoding).

transformers' SDPA attention copies each layer's keys and values `num_key_value_groups` times
(`repeat_kv`) before `scaled_dot_product_attention` unless its `use_gqa_in_sdpa` allows SDPA's own
`enable_gqa`, which it does only without an attention mask (a padded batch always has one) and
for CUDA kernels. On the CPU, torch's SDPA with `enable_gqa=True` and a mask reads each key/value
head for its group in place and returns the same output bit for bit
(tests/core/test_fast_decode_layers.py); at the demo shape (SmolLM2-135M: 9 query heads on 3 key/value
heads, ~120-token prompts, 8 rows) the copies cost ~8 ms of a ~120 ms decode step.

`grouped_query_sdpa()` is a context manager: inside it, transformers' SDPA path uses
`enable_gqa` for CPU tensors (GPU tensors keep transformers' own rule). It replaces one module
function for the whole process while inside, so it wraps single-threaded decoding only.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import torch


def _cpu_gqa(original):
    def use_gqa_in_sdpa(attention_mask, key: torch.Tensor, value: torch.Tensor) -> bool:
        if key.device.type == "cpu":
            return key.shape[-1] == value.shape[-1]
        return original(attention_mask, key, value)

    return use_gqa_in_sdpa


def available() -> bool:
    """transformers routes through `use_gqa_in_sdpa` and torch's SDPA takes `enable_gqa` (2.5+)."""
    try:
        from transformers.integrations import sdpa_attention
    except ImportError:
        return False
    from packaging.version import Version

    return hasattr(sdpa_attention, "use_gqa_in_sdpa") and Version(torch.__version__).release >= (2, 5)


@contextlib.contextmanager
def grouped_query_sdpa(enabled: bool = True) -> Iterator[bool]:
    """Yields whether the rule is replaced (False where `enabled` is off or `available()` is not)."""
    if not (enabled and available()):
        yield False
        return
    from transformers.integrations import sdpa_attention

    original = sdpa_attention.use_gqa_in_sdpa
    sdpa_attention.use_gqa_in_sdpa = _cpu_gqa(original)
    try:
        yield True
    finally:
        sdpa_attention.use_gqa_in_sdpa = original
