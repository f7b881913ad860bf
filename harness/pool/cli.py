"""`harness pool`: the command line (the filter itself: harness/pool/filter.py)."""
from __future__ import annotations

from ..engine.config import hydra_entry
from ..core.errors import DataError
from . import filter as pool_filter


def filter_main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(pool_filter.__doc__.strip())
        return 0
    return hydra_entry(lambda cfg: pool_filter.filter_task(cfg), argv, "harness pool filter")


def main(argv: list[str]) -> int:
    """`harness pool <subcommand>`: `filter` (self-filter a pool with a model)."""
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: harness pool filter [hydra overrides, e.g. model=llama-3.2-3b pool=file pool.path=P]\n\n"
              "  filter   sample G completions per question, keep 1 <= n_correct <= G-1 plus anchors,\n"
              "           and write the filtered pool file (see configs/pool/ for options)")
        return 0
    if argv[0] == "filter":
        return filter_main(argv[1:])
    raise DataError(f"unknown pool command '{argv[0]}'; valid: filter")
