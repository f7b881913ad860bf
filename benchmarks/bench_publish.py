"""Publishing time with paired bootstrap intervals: 5 sets x 40 rows, 10,000 resamples.

    python benchmarks/bench_publish.py [--resamples 10000] [--models 2] [--methods 5] [--seeds 4]

Builds synthetic runs (leaderboard.testing.make_run_dir) with per-question samples at the
protocol's set sizes (TriviaQA 17,944 ... TruthfulQA 817), records them into a fresh store,
then times `build_tables` (every interval: each line to Raw, the focus line to its best
competitor, macro included) and the whole `publish` (all formats, plots, row files). The
issue's budget is 5 s for publishing the tables (the run viewer off); the gaming floor is excluded
(synthetic sets have no data to score; real floors are cached per set and scorer version after the
first publish). A second publish with the run viewer on (layout `viewer`) times what its sample
shards and side-by-side pages add.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from factrl.leaderboard import Store, publish, record_run
from factrl.leaderboard.settings import load
from factrl.leaderboard.tables.build import build_tables
from factrl.leaderboard.tables import Layout
from factrl.leaderboard.testing import SET_COUNTS, make_run_dir

SETS = ("triviaqa", "nq_open", "popqa", "simpleqa", "truthfulqa")
METHODS = ("raw", "corver", "fspo", "rlfh", "forag", "knowrl")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--models", type=int, default=2)
    parser.add_argument("--methods", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        root, store = Path(tmp) / "runs", Path(tmp) / "lb.sqlite"
        started = time.perf_counter()
        for model in range(args.models):
            for m, method in enumerate(METHODS[: args.methods]):
                for seed in range(args.seeds):
                    samples = {}
                    for name in SETS:
                        correct = rng.random(SET_COUNTS[name]) < 0.3 + 0.02 * m
                        samples[name] = [{"id": f"q{i}", "correct": bool(c)} for i, c in enumerate(correct)]
                    run = make_run_dir(root, method=method, model=f"model-{model}", seed=seed,
                                       scores={name: 0.0 for name in SETS}, samples=samples)
                    record_run(run, store)
        rows = [{k: v for k, v in r.items() if k != "_recorded"} for r in Store(store).rows()]
        per_set = len(rows) // len(SETS)
        print(f"setup: {len(rows)} rows ({per_set} per set) in {time.perf_counter() - started:.1f} s")
        layout = {"focus_method": "corver", "bootstrap": {"resamples": args.resamples, "seed": 0},
                  "floors": {"enabled": False}}
        started = time.perf_counter()
        tables = build_tables(rows, Layout({**load(), **layout}))
        build_s = time.perf_counter() - started
        cells = [c for t in tables if t.name == "accuracy" for line in t.lines for c in line.cells.values()]
        intervals = sum(c.ci is not None for c in cells) + sum(bool(c.vs_raw and c.vs_raw[1] is not None)
                                                                for c in cells)
        started = time.perf_counter()
        publish(store, None, Path(tmp) / "site", {**layout, "viewer": {"enabled": False}})
        publish_s = time.perf_counter() - started
        started = time.perf_counter()
        publish(store, None, Path(tmp) / "site-viewer", layout)
        viewer_s = time.perf_counter() - started
        samples = len(rows) * sum(SET_COUNTS[name] for name in SETS) // len(SETS)
        print(f"build_tables: {build_s:.2f} s for {intervals} intervals x {args.resamples} resamples")
        print(f"publish (all formats, plots, row files): {publish_s:.2f} s  [budget 5 s: "
              f"{'ok' if publish_s < 5 else 'OVER'}]")
        print(f"publish with the run viewer (every run's {samples // (len(rows) // len(SETS))} samples in shards, "
              f"side-by-side pages): {viewer_s:.2f} s (the viewer: {viewer_s - publish_s:+.2f} s; "
              "benchmarks/bench_viewer.py measures its pages)")


if __name__ == "__main__":
    main()
