"""Did training move the adapter? `train/adapter_delta.json`, and a run that fails when it did not.

A trainer whose updates never reach the LoRA weights (a zero learning rate, gradients that are
silently zero, every completion without signal) still writes an adapter, and its evaluation equals
the untrained model's: a comparison cannot tell it from a method that learned nothing. The engine
snapshots the trainable weights once the trainer has wrapped the model (their initial values; a
resumed run rebuilds the same ones from the seed before loading its checkpoint, checked by a hash
stored beside the log) and compares them with the trained weights after the last step.

    {"schema": "factrl.adapter_delta/1", "tensors": 112, "changed": 112,
     "relative_change": 0.0132, "max_abs_change": 0.0041, "initial_sha256": "..."}

`relative_change` = ||theta_T - theta_0|| / ||theta_0|| over every trainable tensor (LoRA A and B;
B starts at 0, so the norm is the A matrices'). `changed == 0` fails the run with one line.
"""
from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import torch

from ..core.errors import HarnessError

FILENAME = "adapter_delta.json"
INIT_FILENAME = "adapter_init.json"
SCHEMA = "factrl.adapter_delta/1"


class AdapterUnchangedError(HarnessError):
    """Training ended with every trainable weight at its initial value."""


def snapshot(model: Any) -> dict[str, torch.Tensor]:
    """The trainable tensors' current values (CPU copies), by parameter name."""
    return {name: p.detach().to("cpu", copy=True) for name, p in model.named_parameters() if p.requires_grad}


def fingerprint(values: dict[str, torch.Tensor]) -> str:
    digest = hashlib.sha256()
    for name in sorted(values):
        tensor = values[name].contiguous()
        digest.update(name.encode())
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.numpy().tobytes() if tensor.dtype != torch.bfloat16 else tensor.float().numpy().tobytes())
    return digest.hexdigest()


def delta(initial: dict[str, torch.Tensor], final: dict[str, torch.Tensor]) -> dict[str, Any]:
    """The adapter_delta.json document for two snapshots of the same tensors."""
    changed, diff_sq, base_sq, largest = 0, 0.0, 0.0, 0.0
    for name, before in initial.items():
        after = final[name].to(before.dtype)
        diff = (after.double() - before.double())
        if not torch.equal(after, before):
            changed += 1
        diff_sq += float((diff * diff).sum())
        base_sq += float((before.double() ** 2).sum())
        largest = max(largest, float(diff.abs().max()) if diff.numel() else 0.0)
    relative = math.sqrt(diff_sq) / math.sqrt(base_sq) if base_sq > 0 else (math.inf if diff_sq > 0 else 0.0)
    return {"schema": SCHEMA, "tensors": len(initial), "changed": changed, "relative_change": relative,
            "max_abs_change": largest, "initial_sha256": fingerprint(initial)}


def check(document: dict[str, Any], path: Path) -> None:
    """Raise AdapterUnchangedError (one line) when no trainable tensor moved."""
    if document["tensors"] and document["changed"] == 0:
        raise AdapterUnchangedError(
            f"training left all {document['tensors']} trainable LoRA tensors at their initial values ({path}): "
            f"no update reached the adapter; check train.learning_rate and the warmup (train.warmup_ratio), and "
            f"the share of completions without reward signal in train/log.jsonl")
