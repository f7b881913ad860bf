"""Loss options beyond TRL's own aggregation: `train.loss_chunks`.

KnowRL's release trains through unsloth 2025.11.3, whose GRPO `compute_loss` (unsloth
models/rl_replacements.py:613-790; its log-prob function returns None, :510-511) calls
unsloth_zoo 2025.11.4's `grpo_accumulated_loss` (rl_replacements.py:543-640) -> `UnslothEfficientGRPO`
(:381-529): the micro-batch is split into n row chunks (`unsloth_num_chunks`, default -1: one chunk
per row; n is rounded up to a divisor of the rows), the loss of each chunk is computed with the
micro-batch's normalisers and the chunk losses (and gradients) are averaged. For `grpo` that is
TRL's loss (equal chunks, a mean of per-sequence means); for `dapo` and `dr_grpo` it is TRL's loss
divided by n; for `bnpo` it is the mean of the chunks' token means. The vector
tests/reference_vectors/unsloth/knowrl_efficient_grpo.json pins it.

`chunked_loss` runs TRL's `_compute_loss` on each chunk of the micro-batch's inputs (one forward
per chunk) and returns the mean: TRL's loss, ratio, clip, KL, importance weights and aggregation
stay TRL's own.

Shapes: every tensor of `inputs` whose first dimension is the micro-batch's row count B is cut
into chunks of B / n rows ((B, T) log-probs, masks and advantages; (B, P) prompt ids); anything
else (the scalar `num_items_in_batch`) is passed whole, as unsloth passes its kwargs.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from trl import GRPOConfig

from ..core.errors import ConfigError


@dataclass
class HarnessGRPOConfig(GRPOConfig):
    """TRL's GRPOConfig plus the harness's loss options (read by TokenGRPOTrainer._compute_loss)."""

    loss_chunks: int | None = field(default=None, metadata={
        "help": "train.loss_chunks: None for TRL's aggregation; n or -1 for unsloth's chunk average"})


def chunk_count(rows: int, requested: int) -> int:
    """unsloth's n_chunks for `requested` on a micro-batch of `rows` rows (rl_replacements.py:567-569):
    -1 gives one chunk per row; otherwise the smallest divisor of `rows` >= requested (at most rows)."""
    if requested == 0 or requested < -1:
        raise ConfigError(f"train.loss_chunks={requested}: use null, -1 (one chunk per row) or a count >= 1")
    factors = [i for i in range(1, rows + 1) if rows % i == 0]
    wanted = rows if requested == -1 else requested
    return factors[min(bisect.bisect_left(factors, wanted), len(factors) - 1)]


def split_inputs(inputs: dict[str, Any], rows: int, chunks: int) -> list[dict[str, Any]]:
    """The batch dict cut into `chunks` dicts of rows / chunks rows each (see the module docstring)."""
    size = rows // chunks
    parts: list[dict[str, Any]] = [{} for _ in range(chunks)]
    for key, value in inputs.items():
        cut = isinstance(value, torch.Tensor) and value.dim() >= 1 and value.size(0) == rows
        for i, part in enumerate(parts):
            part[key] = value[i * size:(i + 1) * size] if cut else value
    return parts


def chunked_loss(compute: Callable[[Any, dict], torch.Tensor], model: Any, inputs: dict[str, Any],
                 chunks: int | None) -> torch.Tensor:
    """`compute(model, inputs)` (TRL's `_compute_loss`) as is for `chunks` None, else the mean of
    it over unsloth's row chunks of the micro-batch."""
    if chunks is None:
        return compute(model, inputs)
    rows = int(inputs["completion_ids"].size(0))
    n = chunk_count(rows, int(chunks))
    if n == 1:
        return compute(model, inputs)
    losses = [compute(model, part) for part in split_inputs(inputs, rows, n)]
    return torch.stack(losses).mean()


__all__ = ["HarnessGRPOConfig", "chunk_count", "chunked_loss", "split_inputs"]
