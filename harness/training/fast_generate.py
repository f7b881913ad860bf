"""HF rollouts on a static KV cache, with the decode step compiled: the generation config TRL would not build.

TRL 1.16 builds its HF generation config once, as `GenerationConfig(**generation_kwargs,
disable_compile=True)` (trl/trainer/grpo_trainer.py), and passes it to every `model.generate`.
So `cache_implementation="static"` through `train.generation_kwargs` gets a static cache but never
the compiled decode step that makes it pay (transformers compiles only when `disable_compile` is
false, the cache is compileable and the device is CUDA, or `compile_config._compile_all_devices`).
`rollout_config(base, ...)` is a copy of TRL's config with:

- `cache_implementation="static"`: transformers' StaticCache, preallocated at
  (rows, prompt width + max_new_tokens) per layer, written in place by index. The growing cache
  (torch.cat every decode step) leaves the allocator blocks it cannot reuse: the measured H200 peak
  at 1,000 tokens was 52.0 GB where the KV cache itself is ~6 GB (docs/GPU_CHECK.md). Attention
  reads the whole preallocated length with the positions past the current one masked, so the
  logits equal the dynamic cache's up to float rounding (tests/core/test_fast_generate.py).
- `disable_compile=False` and a `CompileConfig` (compile on): transformers' `get_compiled_call`
  runs each decode step (rows x 1 token, a fixed-shape 4-D mask over the static length) through
  `torch.compile`, mode `reduce-overhead` on CUDA (CUDA graphs: one launch per step instead of
  ~20 kernels per layer) and `default` elsewhere (inductor's C++ kernels; the CPU tests). The
  prefill runs uncompiled, as transformers does it.

`prompt_bucket` (used by the trainer, not here) left-pads the prompts to a multiple of it while
generating, so the cache length (prompt width + limit) takes at most max_prompt_length / bucket
values and transformers, which keeps the largest cache length it has seen, compiles at most that
many decode graphs (torch's recompile limit is 8). Prompts are not sorted into length buckets:
all Q x C rows of a GRPO step decode as one batch, each decode step reads every weight once for all
rows, and the C rows of a question share its prompt, so splitting the batch by length would read
the weights once per split for the same tokens.
"""
from __future__ import annotations

import contextlib
import copy
from typing import Any, Iterator


def rollout_config(base: Any, *, static: bool, compile: bool, device_type: str) -> Any:
    """A copy of TRL's GenerationConfig for this rollout (`base` is left as it is).

    static: a static KV cache. compile: the decode step compiled (needs static).
    device_type: "cuda" gets mode reduce-overhead (CUDA graphs); others mode default, allowed on
    every device (transformers compiles only on accelerators unless told otherwise).
    """
    if compile and not static:
        raise ValueError("a compiled decode step needs the static cache (train.rollout.static_cache)")
    config = copy.deepcopy(base)
    if static:
        config.cache_implementation = "static"
    config.disable_compile = not compile
    if compile:
        from transformers import CompileConfig

        compile_config = CompileConfig(fullgraph=False, dynamic=False,
                                       mode="reduce-overhead" if device_type == "cuda" else "default")
        compile_config._compile_all_devices = device_type != "cuda"  # a class default of None
        config.compile_config = compile_config
    return config


def round_up(width: int, bucket: int) -> int:
    """The padded prompt width for a bucket (0 or 1: the width itself)."""
    return width if bucket <= 1 else -(-int(width) // int(bucket)) * int(bucket)


@contextlib.contextmanager
def static_generation(trainer: Any, resolved: dict[str, Any], device_type: str) -> Iterator[None]:
    """For one HF `generate` of a TRL GRPOTrainer: its generation config swapped for the static-cache
    (and compiled) one, and its prompts left-padded to `resolved["prompt_bucket"]`; both restored
    after. `resolved`: RolloutSettings.resolved(device_type)."""
    config, padding = trainer.generation_config, trainer.pad_to_multiple_of
    trainer.generation_config = rollout_config(config, static=True, compile=resolved["compile"],
                                               device_type=device_type)
    if resolved["prompt_bucket"] > 1:
        trainer.pad_to_multiple_of = resolved["prompt_bucket"]
    try:
        yield
    finally:
        trainer.generation_config, trainer.pad_to_multiple_of = config, padding
