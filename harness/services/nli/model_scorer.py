"""Shared part of the model backends: one padded forward pass per length-sorted batch, at the
precision the settings name (weights dtype, and bf16 autocast on CUDA)."""
from __future__ import annotations

import contextlib
from typing import Any

from .base import NLIScorer, run_batched


class ModelScorer(NLIScorer):
    """A classifier and its tokenizer; subclasses encode pairs and pick the positive class.

    Subclasses set `self.model`, `self.tokenizer`, `self.batch_size` and implement
    `_encode(pairs) -> list[dict]` (unpadded input_ids / attention_mask, ...) and
    `_positive(logits (b, C)) -> probabilities (b,)`.
    """

    model: Any
    tokenizer: Any
    batch_size: int
    cfg: Any
    device: str

    def _dtype_name(self) -> str:
        """The weights' dtype for `cfg.dtype` on `self.device` (`auto`: bf16 on CUDA, fp32 on CPU)."""
        from .resolve import resolve_dtype

        return resolve_dtype(self.cfg.dtype, self.device)

    @property
    def autocast_active(self) -> bool:
        """bf16 autocast runs only on CUDA (the release's setting); on CPU compute stays as loaded."""
        return self.cfg.autocast == "bfloat16" and str(self.device).startswith("cuda")

    def _autocast(self):
        if not self.autocast_active:
            return contextlib.nullcontext()
        import torch

        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)

    def precision(self) -> dict[str, Any]:
        """describe()'s precision fields: the weights' dtype, the setting, autocast as applied."""
        entry: dict[str, Any] = {"dtype": self._dtype_name(), "dtype_setting": self.cfg.dtype,
                                 "autocast": "bfloat16" if self.autocast_active else "none"}
        if self.cfg.autocast != "none" and not self.autocast_active:
            entry["precision_note"] = (f"autocast={self.cfg.autocast} applies on CUDA only; this scorer ran on "
                                       f"{self.device} in {self._dtype_name()} without autocast")
        return entry

    def _score(self, pairs: list[tuple[str, str]]) -> list[float]:
        return run_batched(self._encode(pairs), self.batch_size, self._forward)

    def _encode(self, pairs: list[tuple[str, str]]) -> list[dict[str, list[int]]]:
        raise NotImplementedError

    def _positive(self, logits):
        raise NotImplementedError

    def _forward(self, encodings: list[dict[str, list[int]]]) -> list[float]:
        import torch

        # Right padding always: HHEM reads position 0, which left padding would turn into a pad.
        self.tokenizer.padding_side = "right"
        inputs = self.tokenizer.pad(encodings, padding=True, return_tensors="pt")
        device = next(self.model.parameters()).device  # inputs follow the model (CUDA or CPU)
        inputs = {key: value.to(device) for key, value in inputs.items()}
        with torch.inference_mode(), self._autocast():
            logits = self.model(**inputs).logits
        self._stats["batches"] += 1
        return self._positive(logits.float()).cpu().tolist()
