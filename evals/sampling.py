"""Seeded question samples shared by the judged evaluations (FActScore-NPM, semantic checks)."""
from __future__ import annotations

import random


def sample_indexes(count: int, size: int | None, seed: int) -> list[int]:
    """Sorted indexes of `size` questions out of `count` (all when size is None or >= count),
    drawn with `random.Random(seed)`: the same sample for every model on the same set."""
    if size is None or size >= count:
        return list(range(count))
    return sorted(random.Random(seed).sample(range(count), int(size)))
