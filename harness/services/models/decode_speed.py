"""What decoding a batch can reach on a GPU, and how a measured step scales to another token limit.

Decoding is memory-bound: each decode step reads every weight once (for all rows together) and
each row's keys and values so far. The bound on generated tokens/s for `rows` rows of a prompt
of P tokens, T new tokens each, on a device reading `bandwidth` bytes/s:

    bytes(t) = W + rows x kv_len(t) x (2 x layers x kv_dim x b)     (t = 0 .. T-1)
    kv_len(t) = P + t (a dynamic cache), P + T (a static cache: attention runs over its whole length)
    seconds >= sum_t bytes(t) / bandwidth;   tokens/s <= rows x T / seconds

W: the weights a decode step streams, b per parameter (the input embedding is gathered, not
streamed, unless it is tied to the output head). Prefill, sampling and kernel launches come on top,
so a measured rate is a fraction of the bound. Bandwidths: the vendors' HBM figures (`HBM_TBPS`).
"""
from __future__ import annotations

from typing import Any, Mapping

# Peak HBM bandwidth, TB/s, by a substring of torch.cuda.get_device_name() (NVIDIA data sheets;
# first match wins, so the more specific names come first).
HBM_TBPS = (("GH200", 4.9), ("H200", 4.8), ("H100 NVL", 3.9), ("H100 PCIe", 2.0), ("H100", 3.35),
            ("B200", 8.0), ("A100-SXM4-80GB", 2.039), ("A100 80GB PCIe", 1.935), ("A100", 1.555),
            ("L40S", 0.864))


def bandwidth_tbps(device_name: str) -> float | None:
    """The device's HBM bandwidth in TB/s from HBM_TBPS, or None for a device not listed."""
    for key, tbps in HBM_TBPS:
        if key.lower() in device_name.lower():
            return tbps
    return None


def streamed_weight_bytes(arch: Mapping[str, Any], dtype_bytes: int = 2) -> int:
    """W: the bytes of weights one decode step reads (all parameters but an untied input embedding)."""
    from .shapes import parameter_count

    embedding = 0 if arch.get("tie_word_embeddings") else int(arch["vocab_size"]) * int(arch["hidden_size"])
    return (parameter_count(arch) - embedding) * dtype_bytes


def decode_bound(arch: Mapping[str, Any], *, rows: int, prompt_len: int, new_tokens: int, bandwidth_tbps: float,
                 dtype_bytes: int = 2, static_cache: bool = False) -> dict[str, float]:
    """The memory-bandwidth bound of generating `new_tokens` for `rows` rows (module docstring).
    Out: seconds (the least), tokens_per_s (the most), bytes_per_step (mean), weight_bytes, kv_bytes (mean per step)."""
    from .shapes import _dims

    _, _, _, kv, _, layers = _dims(arch)
    weights = streamed_weight_bytes(arch, dtype_bytes)
    per_token = 2 * layers * kv * dtype_bytes
    steps = int(new_tokens)
    if static_cache:
        kv_total = steps * rows * (prompt_len + steps) * per_token
    else:  # sum over t of (P + t)
        kv_total = rows * per_token * (steps * prompt_len + steps * (steps - 1) / 2)
    total = steps * weights + kv_total
    seconds = total / (bandwidth_tbps * 1e12)
    return {"seconds": seconds, "tokens_per_s": rows * steps / seconds if seconds else 0.0,
            "bytes_per_step": total / max(steps, 1), "weight_bytes": float(weights),
            "kv_bytes": kv_total / max(steps, 1)}


def project_step(phases: Mapping[str, float], *, measured_tokens: int, target_tokens: int,
                 prompt_len: int) -> float:
    """A step's seconds at `target_tokens` from one measured at `measured_tokens` (random weights:
    every completion runs to the limit). phases: generate, rollout (generation + log-probs; it
    contains generate and reward), reward, update, save.

    generate x target / measured (the same cost per decode step: an upper estimate when the KV
    reads are small against the weights, as for 3B at batch 48); log-probs and update x
    (P + target) / (P + measured) (one pass over each sequence); reward x target / measured (it
    reads every completion token); save as measured.
    """
    tokens = target_tokens / measured_tokens
    sequence = (prompt_len + target_tokens) / (prompt_len + measured_tokens)
    generate = phases.get("generate", 0.0)
    logprobs = max(phases.get("rollout", 0.0) - generate - phases.get("reward", 0.0), 0.0)
    return (generate * tokens + logprobs * sequence + phases.get("reward", 0.0) * tokens
            + phases.get("update", 0.0) * sequence + phases.get("save", 0.0))
