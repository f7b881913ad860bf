"""The process group's timeout as the harness sets it up (run as `python -m tests.distributed.dist_timeout
OUT SECONDS` under torchrun --nproc_per_node 2): each rank writes OUT/timeout-rank<R>.json."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch


def main(out: Path, seconds: float) -> None:
    import torch.distributed as dist

    from factrl.harness.training import distributed

    distributed.configure(seconds)
    shared = distributed.share_from_main("from rank 0" if distributed.is_main() else None)
    backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
    (out / f"timeout-rank{distributed.rank()}.json").write_text(json.dumps(
        {"timeout_s": backend.options._timeout.total_seconds(), "shared": shared}))
    distributed.barrier()
    distributed.shutdown()


if __name__ == "__main__":
    main(Path(sys.argv[1]), float(sys.argv[2]))
