"""Per-token log-probs (and entropies) of the completion tokens: the passes every trainer step makes.

TRL 1.16 scores completions through its fused LM head (`add_fused_lm_head`): the backbone over
each whole row, then the output projection and log-softmax in tiles. On CUDA the tiles run in
Triton over the labelled positions only. Elsewhere they run as a Python loop over *every* position
of the row, prompt included (TRL keeps the tile shapes fixed for compilers such as Neuron's): at the
demo shape about 2.5 s of a ~5 s forward and 4-5 s of the backward go to that loop. Two changes
here, each equal to TRL's pass up to float rounding (tests/core/test_fast_step.py):

- `head="plain"`: the model's own forward with `logits_to_keep` = the completion width + 1, then
  log-softmax over the kept logits / temperature and a gather: the LM head runs on the completion
  positions only, in one matmul. The (B, T, V) logits are materialised, so "auto" takes it on
  the CPU while they fit in `PLAIN_HEAD_BYTES`, TRL's fused head otherwise (and on every GPU).
- `shared_prefix=True`: rows that share their prompt (a GRPO group: C completions of one question)
  run the prompt once (training/shared_prefix.py) and the completions on a differentiable copy of
  its key/value cache.

`completion_logps` returns None where neither applies, and the caller runs TRL's own pass.

Shapes: input_ids, attention_mask (B, P + T) with the completion in the last T = `width`
positions; out: logps (B, T) and entropies (B, T) or None, 0 at masked completion positions
(TRL's convention).
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from .shared_prefix import prompt_groups, split

PLAIN_HEAD_BYTES = 1 << 30  # at most 1 GiB of float32 logits per pass for the plain head (auto)
HEADS = ("auto", "fused", "plain")


def plain_head_fits(rows: int, width: int, vocab: int) -> bool:
    return rows * (width + 1) * vocab * 4 <= PLAIN_HEAD_BYTES


def choose_head(setting: str, device: torch.device, rows: int, width: int, vocab: int) -> str:
    """'plain' or 'fused' for one pass of `rows` x `width` completion positions."""
    if setting in ("plain", "fused"):
        return setting
    return "plain" if device.type == "cpu" and plain_head_fits(rows, width, vocab) else "fused"


def _scores(logits: torch.Tensor, targets: torch.Tensor, valid: torch.Tensor, temperature: float,
            compute_entropy: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs of `targets` (B, T) under logits (B, T, V) / temperature, and the entropies."""
    logits = logits.float() / temperature
    logp_all = torch.log_softmax(logits, dim=-1)
    logps = logp_all.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    logps = logps.masked_fill(~valid, 0.0)
    entropies = None
    if compute_entropy:
        entropies = -(logp_all.exp() * logp_all).sum(-1).masked_fill(~valid, 0.0)
    return logps, entropies


def completion_logps(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, width: int, *,
                     temperature: float, compute_entropy: bool, head: str, shared_prefix: bool,
                     config: Any, autocast: Callable[[], Any]) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """(logps, entropies) of one chunk of rows, or None: the caller then runs TRL's fused pass.

    `head`: "plain" or "fused" (resolved by `choose_head`); `shared_prefix`: run a shared prompt
    once; `config`: the unwrapped model's config (the cache's layer types); `autocast`: the
    accelerator's autocast context factory.
    """
    width = int(width)
    groups = prompt_groups(input_ids, attention_mask, width) if shared_prefix else None
    if head == "fused" and groups is None:
        return None
    targets = input_ids[:, -width:]
    valid = attention_mask[:, -width:].bool()
    if groups is not None:
        def prefix(**inputs):
            with autocast():  # the LM head on the last prompt position only: unused
                model(**inputs, use_cache=True, logits_to_keep=1)

        parts = split(input_ids, attention_mask, width, groups, config, prefix)
        if parts is not None:
            suffix, cache = parts
            if head == "fused":  # TRL's fused head over the suffix: completion tokens only, padding out
                labels = suffix.masked_fill(attention_mask[:, -suffix.size(1):] == 0, -100)
                labels[:, 0] = -100  # the prompt's last token is context
                with autocast():
                    out = model(input_ids=suffix, attention_mask=attention_mask, past_key_values=cache,
                                labels=labels, fused_lm_head=True)
                return out.log_probs[:, -width:], out.entropy[:, -width:] if compute_entropy else None
            with autocast():
                logits = model(input_ids=suffix, attention_mask=attention_mask, past_key_values=cache,
                               use_cache=False, logits_to_keep=width + 1).logits
            return _scores(logits[:, :-1], targets, valid, temperature, compute_entropy)
        if head == "fused":
            return None
    with autocast():
        logits = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False,
                       logits_to_keep=width + 1).logits
    return _scores(logits[:, :-1], targets, valid, temperature, compute_entropy)
