"""Shared part of the model backends: one padded forward pass per length-sorted batch."""
from __future__ import annotations

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
        with torch.inference_mode():
            logits = self.model(**inputs).logits
        self._stats["batches"] += 1
        return self._positive(logits.float()).cpu().tolist()
