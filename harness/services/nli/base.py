"""The narrow NLI interface every backend fills: pairs in, probabilities out (docs/BASELINES.md §1.3).

`score([(premise, hypothesis), ...])` returns, per pair and in input order, the probability
that the premise supports the hypothesis. Model backends sort pairs by token length, run one
forward pass per batch of `batch_size` and restore the order, so a pair's score does not
depend on its neighbours beyond padding (right padding; attention masks hide it).
"""
from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from ...core.errors import DataError

# Changes whenever anything here or in a backend can change a score (recorded by describe()).
NLI_VERSION = "1"


def check_pairs(pairs: Any) -> list[tuple[str, str]]:
    """A list of (premise, hypothesis) string pairs, or a DataError naming the bad item."""
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence):
        raise DataError(f"NLIScorer.score expects a list of (premise, hypothesis) pairs, got {type(pairs).__name__}.")
    out = []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not all(isinstance(t, str) for t in pair):
            raise DataError(f"NLI pair {i} is {pair!r:.80}; each pair must be (premise: str, hypothesis: str).")
        out.append((pair[0], pair[1]))
    return out


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped longest first (ties by position), so padding per batch stays small and an
    out-of-memory batch shows up at the start, not after an hour."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def run_batched(encodings: list[dict[str, list[int]]], batch_size: int,
                forward: Callable[[list[dict[str, list[int]]]], list[float]]) -> list[float]:
    """Call `forward` on length-sorted batches of encodings; scores come back in input order."""
    scores: list[float] = [0.0] * len(encodings)
    for batch in length_batches([len(e["input_ids"]) for e in encodings], batch_size):
        for index, value in zip(batch, forward([encodings[i] for i in batch])):
            scores[index] = float(value)
    return scores


class NLIScorer(ABC):
    """Base of the backends: input checks, counters and timing around `_score`."""

    backend: str = ""

    def __init__(self) -> None:
        self._stats = {"pairs": 0, "calls": 0, "batches": 0, "seconds": 0.0}

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Probability that each premise supports its hypothesis, in input order."""
        checked = check_pairs(pairs)
        if not checked:
            return []
        started = time.perf_counter()
        scores = self._score(checked)
        self._stats["pairs"] += len(checked)
        self._stats["calls"] += 1
        self._stats["seconds"] += time.perf_counter() - started
        return scores

    @abstractmethod
    def _score(self, pairs: list[tuple[str, str]]) -> list[float]:
        """Scores for a non-empty, checked list of pairs."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """A component entry (kind "nli"): what can change a score, for results and tables."""

    def stats(self) -> dict[str, Any]:
        """Counters since load: pairs, calls, batches, seconds (and backend-specific ones)."""
        return {**self._stats, "seconds": round(self._stats["seconds"], 3)}
