"""One forward over a rollout's repeated prompts: the prompt once per question, the completions on its cache.

A rollout holds C completions of each question, so the C rows of a question start with the same
(left-padded) prompt. The PPO engine runs many passes over these rows per rollout (rollout and
reference log-probs, the critic's values, then a policy and a critic forward and backward in each
of its epochs); with the prompt making up most of every row (the demo batch: ~140 prompt tokens
to <= 64 completion tokens), running each prompt C times is most of the work. Here each distinct
prompt runs once, and every row continues from a copy of that prompt's key/value cache:

    prefix pass: the U distinct prompts, all but their last token       (U, P - 1)
    suffix pass: each row's last prompt token and its completion        (B, T + 1)
                 on its prompt's cache, picked by index (differentiable)

The suffix sees the same keys, values, positions (0..W-1, counted over the padded row, as the
plain forward counts them) and attention mask as the plain forward over the whole row, so the
result is the plain forward's up to float rounding (the attention runs in two blocks), and the
gradient reaches the prompt's activations through the index (summed over the rows sharing it),
as in the plain forward. The last prompt token is in the suffix because its hidden state predicts
the first completion token; the suffix's hidden states 0..T-1 are the plain forward's positions
P-1..W-2, the ones the log-probs and the values are read from.

Used only where it is exact up to rounding: rows sharing a prompt, a text-only batch, full
attention in every layer (no sliding window) and no gradient checkpointing (a checkpointed layer
drops the cache). Anywhere else the callers run the plain forward.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import torch

from ..services.models.common_prefix import full_attention_cache


def prompt_groups(input_ids: torch.Tensor, attention_mask: torch.Tensor, width: int
                  ) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(representatives (U,), inverse (B,)) of the rows' prompts, or None when sharing saves nothing.

    The prompt is everything but the last `width` (completion) positions; two rows share it when
    their prompt ids and prompt mask are equal. representatives[u] is the first row of group u;
    inverse[b] is row b's group. None: no two rows share a prompt, or the prompt has < 2 tokens.
    """
    rows, length = input_ids.shape
    prompt = length - int(width)
    if prompt < 2 or rows < 2:
        return None
    key = torch.cat([input_ids[:, :prompt], attention_mask[:, :prompt].to(input_ids.dtype)], dim=1)
    _, inverse = torch.unique(key, dim=0, return_inverse=True)
    groups = int(inverse.max()) + 1
    if groups == rows:
        return None
    index = torch.arange(rows, device=inverse.device)
    first = torch.full((groups,), rows, dtype=index.dtype, device=inverse.device)
    first = first.scatter_reduce(0, inverse, index, reduce="amin")
    return first, inverse


def checkpointing(module: torch.nn.Module) -> bool:
    """True when any submodule recomputes its forward in the backward (gradient checkpointing)."""
    return any(getattr(m, "gradient_checkpointing", False) is True for m in module.modules())


def split(input_ids: torch.Tensor, attention_mask: torch.Tensor, width: int, groups, config: Any,
          prefix_forward: Callable[..., Any]) -> tuple[torch.Tensor, Any] | None:
    """Run the prefix pass; return the suffix ids (B, T + 1) and the per-row cache, or None.

    prefix_forward(input_ids=, attention_mask=, past_key_values=) runs the model (or its body)
    over the distinct prompts with that cache; the caller passes the same model it runs the
    suffix through, with whatever adapter and autocast are active.
    """
    cache = full_attention_cache(config)
    if cache is None:
        return None
    first, inverse = groups
    prompt = input_ids.size(1) - int(width)
    prefix_forward(input_ids=input_ids[first, :prompt - 1], attention_mask=attention_mask[first, :prompt - 1],
                   past_key_values=cache)
    if cache.get_seq_length() != prompt - 1:  # the model did not fill the cache it was given
        raise RuntimeError(f"shared-prefix pass: the model cached {cache.get_seq_length()} of {prompt - 1} "
                           f"prompt positions")
    cache.batch_select_indices(inverse)  # (U, ...) -> (B, ...): one differentiable copy per row
    return input_ids[:, prompt - 1:], cache


def prefilled_cache(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Any:
    """For generation: a key/value cache of every row's prompt but its last token, each distinct
    prompt run once (a GRPO group's C rows share theirs), or None when no two rows share one.

    `model.generate(input_ids=..., attention_mask=..., past_key_values=cache)` then runs only the
    last prompt token in its first step, at the positions generate itself gives (the attention
    mask's cumulative sum, as `_prepare_position_ids_for_generation` counts them), so it samples
    from the logits of a whole-prompt prefill up to float rounding. In: (B, P) left-padded prompts.
    """
    groups = prompt_groups(input_ids, attention_mask, 0)
    if groups is None:
        return None
    positions = (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)
    config = getattr(model, "config", None)
    first, _ = groups

    def prefix(input_ids, attention_mask, past_key_values):
        rows = first
        model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=past_key_values,
              position_ids=positions[rows, :input_ids.size(1)], use_cache=True, logits_to_keep=1)

    parts = split(input_ids, attention_mask, 0, groups, config, prefix)
    return None if parts is None else parts[1]


@contextlib.contextmanager
def prefilled_generate(model: Any) -> Iterator[None]:
    """While inside, `model.generate(input_ids=, attention_mask=, ...)` starts from
    `prefilled_cache` (each distinct prompt prefilled once) unless the call brings its own cache
    or asks for a static one; leaving restores the method."""
    previous = vars(model).get("generate")
    original = model.generate

    def generate(*args, **kwargs):
        config = kwargs.get("generation_config")
        ids, mask = kwargs.get("input_ids"), kwargs.get("attention_mask")
        if (args or ids is None or mask is None or kwargs.get("past_key_values") is not None
                or getattr(config, "cache_implementation", None)):
            return original(*args, **kwargs)
        with torch.no_grad():
            cache = prefilled_cache(model, ids, mask)
        return original(*args, **kwargs) if cache is None else original(*args, past_key_values=cache, **kwargs)

    model.generate = generate  # an instance attribute shadows the class method for this model only
    try:
        yield
    finally:
        if previous is None:
            del model.generate
        else:
            model.generate = previous
