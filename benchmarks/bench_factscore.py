"""FActScore-NPM and semantic-check speed on CPU.

    python benchmarks/bench_factscore.py [--claims 200] [--latency 0.1] [--seconds 2]

1. NPM: claims per second of `NPMScorer.score` with the stand-in masked LM (tiny random
   RoBERTa, FP32, one thread) on the passages retrieved for each claim; passage encodings are
   memoised, so the first pass (cold) and a second pass over the same claims (warm) are shown.
2. Retrieval: milliseconds per claim of `ClaimRetriever.passages` (top article by BM25, then its
   top 3 passages) on the demo evidence store (built on first use, about 10 s).
3. Semantic checks: judged answers per second through the judge client against a local server
   (its own process) that answers CORRECT after `latency` seconds, at concurrency 1 and 8, with
   the ratio to concurrency x the single-request rate.
Claims are sentences of the demo store's own passages (so retrieval finds their article) and
some with FTS operators. Nothing here asserts.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from factrl.evals.factscore import ClaimRetriever, load_npm  # noqa: E402
from factrl.evals.loaders import Record  # noqa: E402
from factrl.evals.semantic import semantic_correctness  # noqa: E402
from factrl.harness.services.evidence import ensure_demo_store, open_store  # noqa: E402
from factrl.harness.services.judge import open_judge  # noqa: E402
from latency_judge import start_server  # noqa: E402  (benchmarks/, beside this script)


def demo_claims(store, n: int, seed: int = 0) -> list[str]:
    rows = store._rows("SELECT text FROM passages ORDER BY passage_id LIMIT 4000")  # noqa: SLF001 - a benchmark
    sentences = [s.strip() for (text,) in rows for s in re.split(r"(?<=[.!?])\s+", text) if 5 <= len(s.split()) <= 25]
    rng = random.Random(seed)
    picked = rng.sample(sentences, min(n, len(sentences)))
    tricky = ['The "NEAR" probe AND OR NOT studied Eros.', "Jean-Paul Sartre declined -the Nobel* Prize.",
              "NEAR(Paris is ^ the capital"]
    return picked[: max(0, n - len(tricky))] + tricky


class _Set:
    def __init__(self, records):
        self.name, self.task, self.records = "bench", "closed_book", records

    @property
    def count(self):
        return len(self.records)


def bench_semantic(latency: float, seconds: float, levels=(1, 8)) -> list[dict]:
    proc, url = start_server(latency, reply="CORRECT")
    rows = []
    try:
        for level in levels:
            n = max(level, round(seconds / latency) * level)
            records = [Record(f"{level}-{i}", f"Question {level}-{i}?", ("Paris",)) for i in range(n)]
            completions = [f"<answer>Paris {i}</answer>" for i in range(n)]
            cfg = {"backend": "openai", "base_url": url, "model": "bench", "concurrency": level, "cache": None,
                   "timeout": 30, "max_retries": 0}
            with open_judge(cfg, check=False) as judge:
                started = time.perf_counter()
                metrics, _, _ = semantic_correctness(judge, _Set(records), completions, list(range(n)), seed=0,
                                                     size=None)
                wall = time.perf_counter() - started
            rows.append({"concurrency": level, "answers": n, "wall_s": wall, "rate": n / wall,
                         "judged": metrics["semantic_accuracy"]["n"]})
    finally:
        proc.terminate()
        proc.join(5)
    single = rows[0]["rate"] / rows[0]["concurrency"]
    for row in rows:
        row["ratio"] = row["rate"] / (row["concurrency"] * single)
    return rows


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1, help="judge server latency per request, seconds")
    parser.add_argument("--seconds", type=float, default=2.0, help="about how long each concurrency level runs")
    args = parser.parse_args()
    torch.set_num_threads(1)

    store = open_store(ensure_demo_store())
    claims = demo_claims(store, args.claims)
    retriever = ClaimRetriever(store)
    started = time.perf_counter()
    retrieved = [retriever.passages(c) for c in claims]
    retrieval = time.perf_counter() - started
    print(f"retrieval: {len(claims)} claims, {1000 * retrieval / len(claims):.2f} ms per claim "
          f"(top article + its top 3 passages; {retriever.stats['no_article']} without an article)")

    npm, component = load_npm({"model": "standin"})
    for label in ("cold", "warm"):
        started = time.perf_counter()
        scores = [npm.score(c, [p.text for p in passages]) for c, (_, passages) in zip(claims, retrieved)]
        wall = time.perf_counter() - started
        print(f"NPM ({component['model']}, {label} passage cache): {len(claims) / wall:.1f} claims/s "
              f"({sum(s is None for s in scores)} unscorable, {npm.stats['positions']} masked positions so far)")

    print(f"semantic checks, judge server latency {args.latency * 1000:.0f} ms")
    print(f"{'concurrency':>11} {'answers':>8} {'wall s':>7} {'answers/s':>9} {'ratio':>6}")
    for row in bench_semantic(args.latency, args.seconds):
        print(f"{row['concurrency']:>11} {row['answers']:>8} {row['wall_s']:>7.2f} {row['rate']:>9.2f} "
              f"{row['ratio']:>6.2f}")


if __name__ == "__main__":
    main()
