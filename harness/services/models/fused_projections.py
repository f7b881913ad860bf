"""Sibling projections that read the same input, computed as one prepacked matmul (CPU decoding).

A Llama-style layer calls `q_proj`, `k_proj` and `v_proj` on the same hidden states, and
`gate_proj` and `up_proj` on the same input. At a decode step each is a matmul of a handful of
rows whose weight (1-3.5 MB on SmolLM2-135M) streams below the rate of a larger one, and each call
has its own fixed cost: measured on 2 cores, the 211 prepacked linears of a SmolLM2-135M decode
step at 8 rows take ~50 ms, the 121 of the fused layout ~42 ms (`benchmarks/bench_cpu_step.py`
times the whole step). Concatenating the siblings' weights along the output dimension leaves
every output element the same dot product over the same input; oneDNN computes it bit for bit as
the separate matmuls do on this machine (tests/core/test_fast_decode_layers.py checks the logits).

`FusedGroup.forward_of(i)` is member i's forward: whichever member sees a new input first
computes the whole group's output once (keyed by the input tensor's identity and version, so an
input changed in place is computed again; an inference-mode tensor has no version, and nothing
writes into it between the siblings' calls), each member returns its own columns. A member called
alone (another model's layout) is still exact: it computes the group and takes its slice.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

# Children of one module that a Llama-style forward calls on the same input, in this order.
SIBLINGS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


def sibling_groups(model: torch.nn.Module, weights: dict[int, torch.Tensor]
                   ) -> list[tuple[torch.nn.Module, tuple[str, ...]]]:
    """(parent, child names) for each group of SIBLINGS whose every member is in `weights` (module
    id -> the plain weight the caller computes it from) with one input width, dtype and device."""
    groups = []
    for parent in model.modules():
        for names in SIBLINGS:
            members = [getattr(parent, name, None) for name in names]
            if any(m is None or id(m) not in weights for m in members):
                continue
            kinds = {(w.shape[1], w.dtype, w.device) for w in (weights[id(m)] for m in members)}
            if len(kinds) == 1:
                groups.append((parent, names))
    return groups


def stacked(weights: list[torch.Tensor], biases: list[torch.Tensor | None]
            ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The members' (out_i x in) weights stacked into one (sum out_i x in), and their biases
    (None when none has one; a zero bias for a member without one where another has one)."""
    weight = torch.cat([w.detach() for w in weights], 0)
    if all(b is None for b in biases):
        return weight, None
    return weight, torch.cat([b.detach() if b is not None else weight.new_zeros(w.shape[0])
                              for w, b in zip(weights, biases)])


class FusedGroup:
    """One prepacked matmul for the members, of `sizes` output features each."""

    def __init__(self, sizes: list[int], bias: torch.Tensor | None, packed: Any):
        self.bias, self.packed = bias, packed
        self.bounds = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
        self._input: tuple[torch.Tensor, int | None] | None = None
        self._output: torch.Tensor | None = None

    def forward_of(self, index: int) -> Callable[..., torch.Tensor]:
        lo, hi = self.bounds[index], self.bounds[index + 1]

        def forward(x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            version = None if x.is_inference() else x._version  # inference tensors keep no version
            seen = self._input
            if seen is None or seen[0] is not x or seen[1] != version:
                self._output = torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")
                self._input = (x, version)
            return self._output[..., lo:hi].contiguous()

        return forward

    def release(self) -> None:
        """Drop the last input and output (held only between the members' calls)."""
        self._input = self._output = None
