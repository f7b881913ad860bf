"""Judge-client throughput against a local server with a fixed latency.

    python benchmarks/bench_judge.py [--latency 0.2] [--seconds 2] [--levels 1,4,16]

A ThreadingHTTPServer on 127.0.0.1, in a child process, answers every chat completion with
"A" after sleeping `latency` seconds (one thread per request, so 16 requests overlap). The judge client
(`open_judge`, backend openai, cache off, distinct items so nothing is shared) grades batches
at each concurrency level. Printed per level: requests, wall time, requests/s and the ratio
throughput / (concurrency x single-request throughput). Target: ratio >= 0.8 up to 16 (the
client must add almost nothing to the server's latency). Nothing here asserts.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from factrl.harness.services.judge import SIMPLEQA_GRADE, open_judge  # noqa: E402
from latency_judge import start_server  # noqa: E402  (benchmarks/, beside this script)

TARGET = 0.8


def _items(prefix: str, n: int) -> list[dict]:
    return [{"question": "What is the capital of France?", "gold": "Paris", "answer": f"{prefix} answer {i}"}
            for i in range(n)]


def measure(latency: float, seconds: float, levels: list[int]) -> list[dict]:
    proc, url = start_server(latency)
    rows = []
    try:
        for level in levels:
            cfg = {"backend": "openai", "base_url": url, "model": "bench", "concurrency": level, "cache": None,
                   "timeout": 30, "max_retries": 0}
            with open_judge(cfg, check=False) as judge:
                judge.ask_many(SIMPLEQA_GRADE, _items(f"warm{level}", level))  # open the connections
                n = max(level, round(seconds / latency) * level)
                started = time.perf_counter()
                results = judge.ask_many(SIMPLEQA_GRADE, _items(f"c{level}", n))
                wall = time.perf_counter() - started
            assert all(r.ok for r in results), "the benchmark server never fails"
            rows.append({"concurrency": level, "requests": n, "wall_s": wall, "rps": n / wall})
    finally:
        proc.terminate()
        proc.join(5)
    single = rows[0]["rps"] / rows[0]["concurrency"]
    for row in rows:
        row["ratio"] = row["rps"] / (row["concurrency"] * single)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2, help="server latency per request, seconds")
    parser.add_argument("--seconds", type=float, default=2.0, help="about how long each level runs")
    parser.add_argument("--levels", default="1,4,16", help="concurrency levels (the first is the reference)")
    args = parser.parse_args()
    rows = measure(args.latency, args.seconds, [int(x) for x in args.levels.split(",")])
    print(f"judge client, server latency {args.latency * 1000:.0f} ms (target ratio >= {TARGET})")
    print(f"{'concurrency':>11} {'requests':>8} {'wall s':>7} {'req/s':>7} {'ratio':>6}")
    for row in rows:
        verdict = "ok" if row["ratio"] >= TARGET else "BELOW TARGET"
        print(f"{row['concurrency']:>11} {row['requests']:>8} {row['wall_s']:>7.2f} {row['rps']:>7.2f} "
              f"{row['ratio']:>6.2f}  {verdict}")


if __name__ == "__main__":
    main()
