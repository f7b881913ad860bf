"""Evidence retrieval latency on the demo store (target: under 5 ms per query).

    python benchmarks/bench_evidence.py [--store PATH] [--repeats 3] [-k 5]

Queries are the demo questions (harness/core/demo_data.py, about 1,160 FanOutQA single-hop
questions) with their `title` field: KnowRL-style "topic + fact" text. Timed per query,
fastest of `--repeats` (filters out waiting for a CPU on a shared machine), after one
warm-up pass: `search` over the whole store, `for_row` (the row's articles, ranked and
filled to k), and `by_title`. Printed: median and p95 per kind and their ratio to the
target. Nothing here asserts; the numbers are for the README.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from factrl.harness.core.demo_data import demo_pairs  # noqa: E402
from factrl.harness.services.evidence import ensure_demo_store, open_store, split_titles  # noqa: E402

TARGET_MS = 5.0


def timed(call, items, repeats: int) -> list[float]:
    out = []
    for item in items:
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            call(item)
            best = min(best, time.perf_counter() - started)
        out.append(best * 1e3)
    return out


def report(label: str, ms: list[float]) -> str:
    ordered = sorted(ms)
    median, p95 = statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (f"{label:<38} n={len(ms):>5}  median {median:7.3f} ms  p95 {p95:7.3f} ms  "
            f"median/target {median / TARGET_MS:5.2f}  p95/target {p95 / TARGET_MS:5.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", help="store file (default: the demo store, built on first use)")
    parser.add_argument("--repeats", type=int, default=3, help="time each query this often, keep the fastest")
    parser.add_argument("-k", type=int, default=5, help="passages per query (KnowRL: top 5)")
    args = parser.parse_args(argv)
    path = args.store or ensure_demo_store()
    rows = [{"question": r["question"], "title": r["title"]} for r in demo_pairs()]
    with open_store(path) as store:
        print(f"store {store.path} ({store.manifest['counts']['passages']} passages, hash "
              f"{store.manifest_hash[:12]}); {len(rows)} demo questions; target {TARGET_MS} ms per query")
        for row in rows:  # warm-up: page cache, title memo
            store.for_row(row, row["question"], args.k)
            store.search(row["question"], args.k)
        print(report("search(question) whole store", timed(lambda r: store.search(r["question"], args.k), rows,
                                                           args.repeats)))
        # Rows whose articles the store holds: the others return [] at once and would flatter for_row.
        held = [r for r in rows if any(store.resolve_title(t) for t in split_titles(r["title"]))]
        print(report("for_row(row, question), titles held", timed(lambda r: store.for_row(r, r["question"], args.k),
                                                                  held, args.repeats)))
        print(report("by_title(row title), titles held", timed(lambda r: store.by_title(r["title"], args.k), held,
                                                               args.repeats)))
        print(f"{len(held)} of {len(rows)} demo questions name an article the store holds; "
              f"{store.stats()['titles_fuzzy']} titles were resolved by BM25 on the title column")
    return 0


if __name__ == "__main__":
    sys.exit(main())
