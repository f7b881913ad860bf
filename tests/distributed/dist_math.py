"""The collective helpers of training/distributed.py on real processes (gloo), no model.

Run as `python -m tests.distributed.dist_math OUT` under `torchrun --nproc_per_node 2`; each
rank writes OUT/math-rank<R>.json with its slice of the results, from a batch that every rank
builds identically from one seed and then cuts into its own rows, as TRL's sampler does.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from factrl.harness.training import distributed


def global_batch():
    """12 ragged per-token return lists (groups of 4; one None) and (12, 9) values and mask."""
    g = torch.Generator().manual_seed(7)
    lengths = torch.randint(1, 10, (12,), generator=g).tolist()
    returns = [torch.rand(n, generator=g).mul(b % 3 + 1).tolist() for b, n in enumerate(lengths)]
    returns[5] = None
    values = torch.randn(12, 9, generator=g)
    mask = (torch.arange(9).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)).float()
    return returns, values, mask, lengths


def main(out: Path) -> None:
    rank, world = distributed.rank(), distributed.world_size()
    returns, values, mask, lengths = global_batch()
    n = len(returns) // world
    rows = slice(rank * n, rank * n + n)
    width = max(lengths[rows])  # this rank's own padded length, as TRL pads per process
    advantages, stats = distributed.global_token_advantages(returns[rows], 4, width=width, std_floor=0.1)
    whitened = distributed.global_whiten(values[rows], mask[rows])
    param = torch.nn.Parameter(torch.zeros(3))
    param.grad = torch.full((3,), float(rank + 1))
    distributed.average_gradients([param])
    records = distributed.gather_records([{"rank": rank, "b": b} for b in range(2)])
    shared = distributed.share_from_main(f"from rank {rank}")
    (out / f"math-rank{rank}.json").write_text(json.dumps({
        "advantages": advantages.tolist(), "mean_return": stats.mean_return, "whitened": whitened.tolist(),
        "grad": param.grad.tolist(), "records": records, "shared": shared}))


if __name__ == "__main__":
    try:
        main(Path(sys.argv[1]))
    finally:
        distributed.shutdown()
