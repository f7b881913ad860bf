"""HF rollouts with the adapter folded into the weights: one matmul per projection per decode step.

TRL's HF rollout calls `model.generate` on the PEFT model, so every projection of every decode
step runs the base matmul plus PEFT's two LoRA matmuls, a scale and an add (seven projections x
30 layers: 630 small matmuls a step on SmolLM2-135M), and on the CPU each matmul of a handful of
rows re-packs its weight for MKL. Measured at the demo shape (8 rows, 2 cores): a decode step costs
~100-150 ms where the weights alone stream in ~25 ms.

`merged_linears(model, ...)` is a context manager; inside it, each vanilla-LoRA linear computes

    y = x @ (W + sum_a s_a * B_a @ A_a)^T + b        (the active adapters a; W, A, B untouched)

with the merged weight built once per rollout into a separate tensor, so the trained weights and
their optimizer state never see a merge/unmerge round trip (W + D - D is not W in floating point).
On the CPU the merged weights (and the output head's, cached while it is unchanged) are prepacked
for oneDNN (`torch.ops.mkldnn._reorder_linear_weight` / `_linear_pointwise`, the ops
torch.compile's CPU backend uses for frozen linears), which streams them about twice as fast as a
plain `F.linear` on few rows. The result is the unmerged layer's up to float rounding (the sum
runs in another order), so TRL's sampler, its RNG use and its logits processors are unchanged and
a fixed seed gives the same tokens wherever no probability sits at a rounding boundary
(tests/core/test_fast_step.py).

On CUDA (`inplace=True`) the adapter is instead added into each base weight in place, after a
copy of the weight is saved, and PEFT's own `merged` branch runs (`base_layer(x)`); leaving copies
the saved weight back, so the trained weights come back bit for bit (no W + D - D round trip). The
model keeps the same modules, forwards and weight addresses from one rollout to the next, which
torch.compile's guards and CUDA-graph capture need (a fresh closure per rollout recompiles). In
bf16 the merged weight is rounded once to bf16: the logits move within bf16's own rounding of the
unmerged layer (tests/core/test_fast_generate.py states the tolerance). Cost: a transient copy of
the adapted weights during the rollout (the memory plan's `merge_copy`).

Left unmerged (their own forward): LoRA variants (DoRA, ...), `fan_in_fan_out` layers, merged or
disabled adapters, and, for the whole model, an active dropout (p > 0 in train mode: the stock
rollout samples through it, a merged weight cannot). Where the model is sharded (DeepSpeed, FSDP)
the caller does not use this at all.
"""
from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
import torch.nn.functional as F

from .fused_projections import FusedGroup, sibling_groups, stacked

log = logging.getLogger(__name__)


@dataclass
class MergeReport:
    """What one `merged_linears` call did (the `rollout` component reports the last one)."""

    merged: int = 0          # LoRA linears computed from a merged weight
    inplace: bool = False    # merged into the base weights in place (restored from a saved copy on leaving)
    head: int = 0            # plain linears (the output head; all of a model without LoRA) prepacked
    left: int = 0            # LoRA linears left on their own forward (variants, fan_in_fan_out, ...)
    prepacked: bool = False  # weights prepacked for oneDNN (CPU)
    skipped: str | None = None  # why nothing was merged (active dropout, no LoRA layer)
    fused: int = 0           # groups of sibling projections computed as one matmul (q/k/v, gate/up)
    seconds: float = 0.0     # building the merged (and prepacked) weights
    notes: list[str] = field(default_factory=list)


def prepack_available(device: torch.device, dtype: torch.dtype) -> bool:
    """oneDNN's prepacked linear runs here: a CPU tensor of float32 / bfloat16 with mkldnn built in."""
    return (device.type == "cpu" and dtype in (torch.float32, torch.bfloat16)
            and torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise"))


def _lora_layer_type():
    try:
        from peft.tuners.lora.layer import Linear
    except ImportError:  # PEFT absent: there is nothing to merge
        return None
    return Linear


def _active_dropout(module: Any, adapters: list[str]) -> bool:
    for name in adapters:
        dropout = module.lora_dropout[name] if name in module.lora_dropout else None
        if isinstance(dropout, torch.nn.Dropout) and dropout.p > 0 and dropout.training:
            return True
    return False


def _mergeable(module: Any) -> list[str] | None:
    """The active vanilla-LoRA adapters of `module`, or None when it must keep its own forward."""
    if module.merged or module.disable_adapters or getattr(module, "fan_in_fan_out", False):
        return None
    if not isinstance(module.base_layer, torch.nn.Linear):
        return None
    adapters = [a for a in module.active_adapters if a in module.lora_A]
    if any(a in getattr(module, "lora_variant", {}) for a in adapters):
        return None
    return adapters


def _merged_weight(module: Any, adapters: list[str]) -> torch.Tensor:
    weight = module.base_layer.weight
    if not adapters:
        return weight
    merged = weight.detach().clone()
    for name in adapters:
        a, b = module.lora_A[name].weight, module.lora_B[name].weight
        # B @ A in the adapter's dtype, added in the base weight's (PEFT's merge does the same).
        merged.add_((b @ a).to(merged.dtype), alpha=float(module.scaling[name]))
    return merged


def _forward_with(weight: torch.Tensor, bias: torch.Tensor | None, packed: Any) -> Callable[..., torch.Tensor]:
    if packed is None:
        def forward(x, *args, **kwargs):
            return F.linear(x, weight, bias)
    else:
        def forward(x, *args, **kwargs):
            return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")
    return forward


def _pack(weight: torch.Tensor, rows: int) -> Any:
    return torch.ops.mkldnn._reorder_linear_weight(weight, rows)


def _version_key(*tensors: torch.Tensor) -> tuple:
    return tuple((t.data_ptr(), t._version, tuple(t.shape), t.dtype) for t in tensors)


@dataclass
class _Target:
    """A linear computed inside the context from one plain weight: a LoRA layer's merged weight or
    a plain linear's own. `key`: what the weight depends on; `cached`: (weight, packed) kept from
    an earlier context under the same key (the weight is built only when needed)."""

    module: Any
    lora: bool
    key: tuple
    build: Callable[[], torch.Tensor]
    cached: tuple | None = None
    _weight: torch.Tensor | None = None

    @property
    def base(self) -> torch.nn.Linear:
        return self.module.base_layer if self.lora else self.module

    def weight(self) -> torch.Tensor:
        if self._weight is None:
            self._weight = self.cached[0] if self.cached is not None else self.build()
        return self._weight

    def packed(self, rows: int) -> Any:
        if self.cached is not None and self.cached[1] is not None:
            return self.cached[1]
        return _pack(self.weight(), rows)


def _lora_target(module: Any, adapters: list[str], use_pack: bool) -> _Target:
    key = (_lora_key(module, adapters), use_pack)
    cached = getattr(module, "_factrl_merged", None)
    return _Target(module, True, key, lambda: _merged_weight(module, adapters),
                   cached[1:] if cached is not None and cached[0] == key else None)


def _plain_target(module: torch.nn.Linear) -> _Target:
    """A frozen weight, such as the output head under LoRA, is packed once, not once per context."""
    key = _version_key(module.weight)
    cached = getattr(module, "_factrl_packed", None)
    return _Target(module, False, key, lambda: module.weight.detach(),
                   (module.weight.detach(), cached[1]) if cached is not None and cached[0] == key else None)


def _single(target: _Target, rows: int, use_pack: bool, keep: bool) -> Callable[..., torch.Tensor]:
    """The target's own forward; caches what `keep` (LoRA) or an unchanged weight (plain) allows."""
    packed = target.packed(rows) if use_pack else None
    if not target.lora:
        target.module._factrl_packed = (target.key, packed)
    elif keep:
        target.module._factrl_merged = (target.key, target.weight(), packed)
    else:
        vars(target.module).pop("_factrl_merged", None)
    return _forward_with(target.weight(), target.base.bias, packed)


def _fused(parent: torch.nn.Module, names: tuple[str, ...], members: list[_Target], rows: int,
           keep: bool) -> FusedGroup:
    """The members as one prepacked matmul (models/fused_projections.py), kept on `parent` while
    no member's weight changes where `keep` (or no member has an adapter) allows it."""
    key = tuple(t.key for t in members)
    store = vars(parent).setdefault("_factrl_fused", {})
    cached = store.get(names)
    if cached is not None and cached[0] == key:
        bias, packed = cached[1], cached[2]
    else:
        weight, bias = stacked([t.weight() for t in members], [t.base.bias for t in members])
        packed = _pack(weight, rows)
    for target in members:  # the group's cache replaces the members' own
        vars(target.module).pop("_factrl_merged", None)
        vars(target.module).pop("_factrl_packed", None)
    if keep or not any(t.lora for t in members):
        store[names] = (key, bias, packed)
    else:
        store.pop(names, None)
    return FusedGroup([int(t.base.weight.shape[0]) for t in members], bias, packed)


def _lora_key(module: Any, adapters: list[str]) -> tuple:
    tensors = [module.base_layer.weight]
    for name in adapters:
        tensors += [module.lora_A[name].weight, module.lora_B[name].weight]
    return (_version_key(*tensors), tuple(float(module.scaling[a]) for a in adapters))


def _merge_in_place(module: Any, adapters: list[str], saved: list) -> None:
    """Add the adapters into module's base weight in place and switch PEFT's forward to its merged
    branch; `saved` gets what `_restore` needs (the weight's copy, PEFT's merged list)."""
    weight = module.base_layer.weight
    saved.append((module, weight.detach().clone(), list(module.merged_adapters)))
    merged = weight.detach().float()  # W + sum s B A in fp32, rounded once to W's dtype
    for name in adapters:
        a, b = module.lora_A[name].weight, module.lora_B[name].weight
        merged = merged + float(module.scaling[name]) * (b.float() @ a.float())
    weight.data.copy_(merged.to(weight.dtype))
    module.merged_adapters = list(adapters)  # PEFT's forward: `elif self.merged: base_layer(x)`


def _restore(saved: list) -> None:
    for module, weight, adapters in saved:
        module.base_layer.weight.data.copy_(weight)
        module.merged_adapters = adapters
    saved.clear()


@contextlib.contextmanager
def fast_decoding(model: torch.nn.Module, *, rows: int, keep: bool = False) -> Iterator[MergeReport]:
    """The CPU decode path outside training's settings (evaluation's `eval.hf_fast`, the format
    warm-up's greedy targets): `merged_linears` with prepacked, fused weights and grouped-query
    SDPA (grouped_attention.py). The same tokens up to float rounding."""
    from .grouped_attention import grouped_query_sdpa

    with merged_linears(model, rows=rows, prepack=True, keep=keep) as report, grouped_query_sdpa():
        yield report


@contextlib.contextmanager
def merged_linears(model: torch.nn.Module, *, rows: int, prepack: bool, keep: bool = False, inplace: bool = False,
                   fuse: bool = True, report: MergeReport | None = None) -> Iterator[MergeReport]:
    """Inside: the model's LoRA linears run on merged weights and, with `prepack`, every linear on
    oneDNN-prepacked ones. `rows`: the sequences generated at once (a packing hint only).
    `keep`: keep the merged weights on the modules after leaving, reused while no weight changes
    (evaluation); training leaves it off, its adapter changes every step. Prepacked plain weights
    are always kept while unchanged.

    `fuse` (with prepack): sibling projections that read one input (q/k/v, gate/up) run as one
    matmul of their stacked weights (models/fused_projections.py).

    `inplace`: merge into the base weights themselves (no prepack, no keep; see the module
    docstring), each restored bit for bit on leaving, also on an exception.

    Out: a MergeReport. Leaving restores every module's own forward and weight; outside the
    context nothing of the model's parameters or buffers has changed.
    """
    if inplace and (prepack or keep):
        raise ValueError("merged_linears(inplace=True) takes neither prepack nor keep")
    import time

    report = report if report is not None else MergeReport()
    lora_type = _lora_layer_type()
    lora = [m for m in model.modules() if lora_type is not None and isinstance(m, lora_type)]
    patched: list[torch.nn.Module] = []
    saved: list = []
    groups: list[FusedGroup] = []
    start = time.perf_counter()
    try:
        plan = [(m, _mergeable(m)) for m in lora]
        sample = next((p for p in model.parameters()), None)
        use_pack = prepack and sample is not None and prepack_available(sample.device, sample.dtype)
        if any(adapters and _active_dropout(m, adapters) for m, adapters in plan):
            report.skipped = "LoRA dropout is active (a merged weight cannot sample through it)"
        elif not lora and not use_pack:
            report.skipped = "no LoRA layer"
        else:
            report.prepacked, report.inplace = use_pack, inplace
            inside = {id(sub) for m in lora for sub in m.modules()}  # base layers, lora_A / lora_B
            targets: dict[int, _Target] = {}
            with torch.no_grad():
                for module, adapters in plan:
                    if adapters is None:
                        report.left += 1
                    elif inplace:
                        _merge_in_place(module, adapters, saved)
                        report.merged += 1
                    else:
                        targets[id(module)] = _lora_target(module, adapters, use_pack)
                        report.merged += 1
                if use_pack:  # plain linears outside LoRA (the output head): prepacking is their only gain
                    for module in model.modules():
                        if type(module) is torch.nn.Linear and id(module) not in inside:
                            targets[id(module)] = _plain_target(module)
                            report.head += 1
                if use_pack and fuse:
                    for parent, names in sibling_groups(model, {i: t.base.weight for i, t in targets.items()}):
                        members = [targets.pop(id(getattr(parent, name))) for name in names]
                        group = _fused(parent, names, members, rows, keep)
                        groups.append(group)
                        for index, target in enumerate(members):
                            target.module.forward = group.forward_of(index)
                            patched.append(target.module)
                        report.fused += 1
                for target in targets.values():
                    target.module.forward = _single(target, rows, use_pack, keep)
                    patched.append(target.module)
        report.seconds = time.perf_counter() - start
        yield report
    finally:
        for module in patched:
            vars(module).pop("forward", None)  # the instance attribute shadowed the class's forward
        for group in groups:
            group.release()
        with torch.no_grad():
            _restore(saved)
