"""The run viewer at scale: how fast a 10,000-sample run opens, and how big the demo grid's site is.

    python benchmarks/bench_viewer.py [--samples 10000] [--steps 100] [--completions 48]
                                      [--demo-steps 40] [--demo-questions 100]

1. Load time. A Raw run and a trained run (paper-grid shape: `--steps` optimizer steps of
   `--completions` completions, six scored sentences each, CorVer's record format) evaluated on
   `--samples` questions, published as `harness leaderboard publish` does (leaderboard.testing
   fixtures in the docs/CONTRACTS.md layout). Headless Chromium (tests/leaderboard/cdp.py) opens
   the trained run's page at its samples (`#set=...`: the first rollout step and the first page
   of samples drawn) and the side-by-side page; the time is the page's own `data-ready` mark,
   milliseconds from navigation start until the first view is drawn (viewer.js), median of
   `--repeats` fresh tabs. Baseline in the same run: the same pages of a 100-sample run, so the
   ratio shows what the size costs (lazy shards: about nothing). Target: under 2 s.
2. Site size. Seven cells as the demo grid has them (Raw and CorVer, FSPO, KnowRL, RLFH, FoRAG,
   NOVER, each in its own record format), `--demo-steps` steps of 2 questions x 8 completions
   and `--demo-questions` evaluation questions, published with the viewer; the folder's bytes.
   Target: under 20 MB.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/leaderboard/cdp.py, the DevTools client the browser tests use

from factrl.leaderboard import publish, record_run  # noqa: E402
from factrl.leaderboard.testing import add_training, eval_samples, make_run_dir  # noqa: E402

METHODS = ("raw", "corver", "fspo", "knowrl", "rlfh", "forag", "nover")


def _chromium() -> str:
    import shutil

    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise SystemExit("needs Chromium (Debian: apt-get install chromium)")
    return found


def _site(root: Path, samples: int, steps: int, completions: int) -> Path:
    store = root / "lb.sqlite"
    for method in ("raw", "corver"):
        run = make_run_dir(root / "runs", method=method, model="m", scores={"demo": 0.0},
                           samples={"demo": eval_samples(samples, [i % (3 if method == "raw" else 2) == 0
                                                                   for i in range(samples)])},
                           train_phases=None if method == "raw" else {"rollout": 60.0}, steps=None if method == "raw"
                           else steps)
        if method != "raw":
            add_training(run, method=method, steps=steps, questions=completions // 8, group_size=8, sentences=6)
        record_run(run, store)
    site = root / "site"
    publish(store, None, site, {"floors": {"enabled": False}})
    return site


def _ready_ms(browser, url: str) -> float:
    browser.open(url)
    deadline = time.monotonic() + 60
    while True:
        ready = browser.js("document.body.getAttribute('data-ready')")
        if ready:
            if ready == "error":
                raise SystemExit(f"{url}: the viewer could not load its data")
            return float(ready)
        if time.monotonic() > deadline:
            raise SystemExit(f"{url}: not ready in 60 s")
        time.sleep(0.02)


def _pages(site: Path) -> tuple[str, str]:
    (run,) = [p for p in (site / "viewer" / "runs").glob("*-corver-*.html")]
    (compare,) = list((site / "viewer" / "compare").glob("*.html"))
    return run.as_uri() + "#set=demo", compare.as_uri()


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--completions", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--demo-steps", type=int, default=40)
    parser.add_argument("--demo-questions", type=int, default=100)
    args = parser.parse_args()
    from tests.leaderboard.cdp import Browser

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        big = _site(root / "big", args.samples, args.steps, args.completions)
        built = time.perf_counter() - started
        small = _site(root / "small", 100, args.steps, args.completions)
        print(f"built: {args.samples} samples + {args.steps} steps x {args.completions} completions, published in "
              f"{built:.1f} s; site {_size(big) / 1e6:.1f} MB")
        browser = Browser(_chromium(), root / "profile", width=1400, height=1000)
        try:
            for label, index in (("run page at its samples", 0), ("side by side", 1)):
                times = {}
                for name, site in (("100", small), (str(args.samples), big)):
                    url = _pages(site)[index]
                    _ready_ms(browser, url)  # a first visit warms the browser's caches of the shared files
                    times[name] = statistics.median(_ready_ms(browser, url) for _ in range(args.repeats))
                ratio = times[str(args.samples)] / times["100"]
                verdict = "ok" if times[str(args.samples)] < 2000 else "OVER"
                print(f"{label}: {args.samples} samples {times[str(args.samples)]:.0f} ms, 100 samples "
                      f"{times['100']:.0f} ms (ratio {ratio:.2f}) [target < 2000 ms: {verdict}]")
        finally:
            browser.close()
        demo = root / "demo"
        store = demo / "lb.sqlite"
        for method in METHODS:
            run = make_run_dir(demo / "runs", method=method, model="smollm2-135m", scores={"demo": 0.0},
                               samples={"demo": eval_samples(args.demo_questions)}, steps=None if method == "raw"
                               else args.demo_steps, train_phases=None if method == "raw" else {"rollout": 60.0})
            if method != "raw":
                add_training(run, method=method, steps=args.demo_steps, questions=2, group_size=8, sentences=6)
            record_run(run, store)
        started = time.perf_counter()
        publish(store, None, demo / "site", {"floors": {"enabled": False}})
        size = _size(demo / "site")
        viewer = _size(demo / "site" / "viewer")
        print(f"demo-shaped site (7 cells, {args.demo_steps} steps x 16 completions, {args.demo_questions} questions): "
              f"{size / 1e6:.2f} MB (viewer {viewer / 1e6:.2f} MB), published in {time.perf_counter() - started:.1f} s "
              f"[target < 20 MB: {'ok' if size < 20e6 else 'OVER'}]")


if __name__ == "__main__":
    main()
