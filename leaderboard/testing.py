"""Build run directories in the exact docs/CONTRACTS.md layout, for tests and demos.

`make_run_dir` writes run.json, config.yaml, timings.json (through the real Timer with a
fake clock) and eval/<set>/{metrics.json, samples.jsonl}. Tests of the leaderboard use it
while the evaluator and the orchestration are built elsewhere; a test that records a real
`harness run` directory can sit beside them and must produce equal tables.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from factrl.harness import __version__
from factrl.harness.prompts import PROMPT_VERSION, prompt_hash
from factrl.harness.rundir import write_json
from factrl.harness.timer import Timer
from factrl.evals import SCORER_VERSION

SET_COUNTS = {"triviaqa": 17944, "nq_open": 3610, "popqa": 14267, "simpleqa": 4326, "truthfulqa": 817,
              "hotpotqa": 7405, "2wikimultihopqa": 12576}
GREEDY = {"do_sample": False, "temperature": 0.0, "top_p": 1.0, "top_k": 0, "repetition_penalty": 1.0,
          "presence_penalty": 0.0, "max_new_tokens": 1000}
H100 = {"kind": "cuda", "name": "NVIDIA H100 80GB HBM3", "count": 1}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _task(name: str, score: Any) -> str:
    if isinstance(score, dict) and "em" in score:
        return "multihop"
    return "truthfulqa" if name == "truthfulqa" else "closed_book"


class FakeClock:
    """A clock for Timer tests: time moves only when the test sets `t`."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def write_timings(path: Path, phases: dict[str, float], device: dict[str, Any] | None = None,
                  steps: int | None = None) -> Path:
    """timings.json for the given seconds per phase, produced by the real Timer."""
    clock = FakeClock()
    timer = Timer(None, sync_cuda=False, autosave_s=None, clock=clock, device=device or H100)
    timer.steps = steps
    for name, seconds in phases.items():
        with timer.phase(name):
            clock.t += seconds
    return timer.write(path)


def _samples(n: int, score: float, seed: str) -> list[dict[str, Any]]:
    """Samples with popularity; popular questions are answered more often (as in PopQA)."""
    rows = []
    for i in range(n):
        popularity = 10 + i * 37 % 9973
        rank = int(_sha(f"{seed}:{i}")[:8], 16) / 0xFFFFFFFF
        boost = 0.5 + popularity / 9973
        rows.append({"id": f"q{i}", "popularity": popularity, "correct": bool(rank < min(1.0, score * boost))})
    return rows


def make_run_dir(root: str | Path, *, method: str = "corver", model: str = "qwen3-4b",
                 model_id: str | None = None, scores: dict[str, Any] | None = None, seed: int = 42,
                 train_phases: dict[str, float] | None = None, device: dict[str, Any] | None = None,
                 steps: int | None = 100, limit: int | None = None, counts: dict[str, int] | None = None,
                 decoding: dict[str, Any] | None = None, prompt: tuple[str, str] | None = None,
                 scorer_version: str = SCORER_VERSION, popularity: bool | tuple[str, ...] = False, adapter: bool | None = None,
                 run_id: str | None = None, samples: dict[str, list[dict[str, Any]]] | None = None,
                 set_blocks: dict[str, dict[str, Any]] | None = None,
                 components: dict[str, dict[str, Any]] | None = None) -> Path:
    """A finished run directory with one eval/<set>/ per entry of `scores`.

    scores: {set: accuracy} or {set: {"em": x, "f1": y}} (fractions). train_phases: seconds
    per timer phase (None: an evaluation-only run without timings.json, like raw).
    popularity: write samples.jsonl with a `popularity` field for these sets (True: popqa);
    their accuracy is then the samples' mean, not the given score.
    samples: {set: samples.jsonl rows} written as given (each with `id` and `correct`; add
    `answer`/`completion` for the diagnostics); the set's accuracy, n and count are then theirs.
    set_blocks: {set: metrics.json `set` block} (e.g. a real `EvalSet.describe()`), replacing the
    synthetic one, so the gaming floor can find and verify the set.
    components: the reward components `harness run` copies into run.json (with `stand_ins`, the
    names flagged `stand_in`), e.g. a judge with `served_model`, `paper_model`, `substitute`.
    """
    pop_sets = ("popqa",) if popularity is True else tuple(popularity or ())
    scores = scores if scores is not None else {"triviaqa": 0.5}
    counts = {**SET_COUNTS, **(counts or {})}
    cfg_hash = _sha(f"{method}|{model}|{seed}|{sorted(scores)}")[:8]
    run_id = run_id or f"20260101-000000-{method}-{model}-{cfg_hash}"
    run_dir = Path(root) / _sha(run_id)[:12]
    run_dir.mkdir(parents=True, exist_ok=True)
    kind = "raw" if method == "raw" else "run"
    stamp = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc).isoformat(timespec="seconds")
    write_json(run_dir / "run.json", {
        "run_id": run_id, "kind": kind, "method": method, "model": model, "config_hash": cfg_hash,
        "seed": seed, "harness_version": __version__, "git_commit": "0" * 40, "started": stamp,
        "status": "finished", "attempts": 1, "finished": stamp,
        **({"components": components, "stand_ins": sorted(n for n, c in components.items() if c.get("stand_in"))}
           if components is not None else {})})
    identity = {"name": model, "id": model_id or f"org/{model}", "revision": None,
                "sha256": _sha(f"weights:{model}"), "path": None}
    config = {"seed": seed, "method": {"name": method}, "model": {**identity, "decoding": decoding or GREEDY},
              "pool": {"name": "demo", "source": "demo", "path": None},
              "train": {"steps": steps}, "eval": {"sets": list(scores), "limit": limit}}
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    if train_phases is not None:
        write_timings(run_dir / "timings.json", train_phases, device, steps)
    use_adapter = (method != "raw") if adapter is None else adapter
    for name, score in scores.items():
        given = (samples or {}).get(name)
        count = len(given) if given is not None else counts.get(name, 100)
        n = min(count, limit) if limit else count
        set_dir = run_dir / "eval" / name
        set_dir.mkdir(parents=True, exist_ok=True)
        if isinstance(score, dict):
            metrics = {k: {"value": float(v), "n": n, "stderr": None, "higher_is_better": True}
                       for k, v in score.items()}
        else:
            value = float(score)
            if given is not None:
                (set_dir / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in given[:n]))
                value = sum(bool(s["correct"]) for s in given[:n]) / n
            elif name in pop_sets:
                generated = _samples(n, value, f"{run_id}/{name}")
                (set_dir / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in generated))
                value = sum(s["correct"] for s in generated) / n
            stderr = (value * (1 - value) / max(n - 1, 1)) ** 0.5
            metrics = {"accuracy": {"value": value, "n": n, "stderr": stderr, "higher_is_better": True},
                       "na_rate": {"value": 0.05, "n": n, "stderr": None, "higher_is_better": False}}
        write_json(set_dir / "metrics.json", {
            "schema": "factrl.eval.metrics/1",
            "set": (set_blocks or {}).get(name) or {
                "name": name, "task": _task(name, score), "source": f"shared/data/benchmarks/{name}.json",
                "revision": None, "sha256": _sha(f"set:{name}"), "count": count, "version": "1"},
            "scorer": {"name": "default", "version": scorer_version},
            "generation": {"backend": "hf", "model": identity,
                           "adapter": {"path": "train/adapter", "sha256": _sha(f"adapter:{run_id}")}
                           if use_adapter else None,
                           "prompt_version": (prompt or (PROMPT_VERSION, prompt_hash()))[0],
                           "prompt_hash": (prompt or (PROMPT_VERSION, prompt_hash()))[1],
                           "decoding": decoding or GREEDY, "limit": limit},
            "metrics": metrics,
            "created": stamp,
        })
    return run_dir
