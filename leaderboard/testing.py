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
from factrl.harness.core import registry
from factrl.harness.core.prompts import PROMPT_VERSION, prompt_hash
from factrl.harness.core.rundir import write_json
from factrl.harness.core.timer import Timer
from factrl.evals import SCORER_VERSION

SET_COUNTS = {"triviaqa": 17944, "nq_open": 3610, "popqa": 14267, "simpleqa": 4326, "truthfulqa": 817,
              "hotpotqa": 7405, "twowiki": 12576}
GREEDY = {"do_sample": False, "temperature": 0.0, "top_p": 1.0, "top_k": 0, "repetition_penalty": 1.0,
          "presence_penalty": 0.0, "max_new_tokens": 1000}
H100 = {"kind": "cuda", "name": "NVIDIA H100 80GB HBM3", "count": 1}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _task(name: str, score: Any) -> str:
    """The registered set's task (a name not registered, e.g. a made-up one: by its score's shape)."""
    if name in registry.names("eval_sets"):
        return registry.eval_set(name).task
    return "multihop" if isinstance(score, dict) and "em" in score else "closed_book"


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


# -- training files (docs/CONTRACTS.md, "Rollouts, training curves and movement") ------------------
SENTENCES = ("Marie Curie was born in Warsaw.", "She studied physics in Paris.", "She won two Nobel prizes.",
             "Her husband was Pierre Curie.", "Radium was discovered in 1898.", "Warsaw is in Poland.")


def _records(method: str, index: int, row_id: str, used: list[str], value: float) -> list[dict[str, Any]]:
    """One completion's reward_records.jsonl lines in `method`'s own format (methods/*/reward.py)."""
    base = {"completion": index, "row_id": row_id}
    if method == "corver":
        return [{**base, "sentence_index": i, "section": "think", "sentence": s, "tokens": 8,
                 "status": "high" if value > 0 else "zero", "reward": round(value * (0.2 if i % 2 else -0.2), 3),
                 "answer_correct": value > 0} for i, s in enumerate(used)]
    if method == "fspo":
        return [{**base, "sentence_index": i, "sentence": s, "tokens": 8, "score": 0.9 if i % 2 == 0 else 0.1,
                 "factual": i % 2 == 0, "step_value": 1 if i % 2 == 0 else -1, "answer_correct": value > 0}
                for i, s in enumerate(used)]
    if method == "forag":
        return [{**base, "sentence_index": i, "sentence": s, "claim": f"claim {i}.{j}", "supported": j == 0,
                 "value": 1.0 if j == 0 else 0.0, "error": None} for i, s in enumerate(used) for j in range(2)]
    if method == "rlfh":
        return [{**base, "status": "ok", "echo": s, "hedged": False, "sentence_index": i, "statement": f"st {i}",
                 "verdict": "Correct" if i % 2 == 0 else "Wrong", "score": 3, "truth": 0.5 if i % 2 == 0 else -0.5,
                 "info": 0.1, "duplicate": False, "rewarded": True, "gated": None, "error": None}
                for i, s in enumerate(used)]
    if method == "knowrl":
        return [{**base, "answer": "Warsaw", "grade": "CORRECT" if value > 0 else "INCORRECT",
                 "correctness": 1.0 if value > 0 else -1.0, "refused": False, "format": 1.0, "fact_term": True,
                 "facts": 2, "supported": 1, "fact": 0.5, "penalty": 0.0, "total": value, "error": None}]
    if method == "nover":  # NOVER writes question_id, no completion index (plugins/nover)
        return [{"question_id": row_id, "format": True, "gated": False, "reasoning_tokens": 20, "mean_nll": 1.2,
                 "perplexity": 3.3, "rank_reward": value, "efficiency_reward": 0.1, "reward": value}]
    return []


def add_training(run_dir: str | Path, *, method: str = "corver", steps: int = 4, questions: int = 2,
                 group_size: int = 4, rise: float = 0.0, seed: int = 0, rollouts: bool = True,
                 texts: dict[int, str] | None = None, adapter_changed: int = 12, sentences: int = 3) -> Path:
    """train/rollouts.jsonl, reward_records.jsonl, log.jsonl and adapter_delta.json of a run with
    `steps` optimizer steps of `questions` x `group_size` completions, in the contract's layout and
    each method's own record format. The mean reward moves by `rise` per step (0: flat noise);
    `texts` replaces completion texts by their index in the run (e.g. an injected <script>);
    `sentences` (at most 6) per completion, the last one its answer."""
    import random

    rng = random.Random(seed)
    train = Path(run_dir) / "train"
    train.mkdir(parents=True, exist_ok=True)
    lines, records, log = [], [], []
    number = 0
    for step in range(1, steps + 1):
        rewards = []
        for q in range(questions):
            row_id = f"row{step}-{q}"
            for g in range(group_size):
                b = q * group_size + g
                used = rng.sample(SENTENCES, sentences)
                text = (texts or {}).get(number) or f"<think>{' '.join(used[:-1])}</think><answer>{used[-1]}</answer>"
                value = round(rise * step + rng.uniform(-0.5, 0.5), 4)
                no_signal = "judge_failed" if (step + b) % 7 == 0 else None
                rewards.append(value)
                lines.append({"step": step, "process": 0, "completion": b, "group": q, "row_id": row_id,
                              "question": f"Where was Marie Curie born? ({row_id})", "prompt": f"Question {row_id}",
                              "text": text, "tokens": 20 + b, "clipped": b == 0, "reward": None if no_signal else value,
                              "advantage": None if no_signal else round(value - rise * step, 4), "no_signal": no_signal})
                records += [{"step": step, **r} for r in _records(method, b, row_id, used, value)]
                number += 1
        mean = sum(rewards) / len(rewards)
        log.append({"step": step, "reward": mean, "reward_std": 0.3, "kl": 0.001 * step, "learning_rate": 1e-5,
                    "completions/mean_length": 40.0 + step, f"rewards/{method}/format_rate": min(1.0, 0.5 + rise * step),
                    f"rewards/{method}/no_signal": 0.1, f"rewards/{method}/correctness_mean": mean,
                    f"rewards/{method}/seconds": 0.01})
    if rollouts:
        (train / "rollouts.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    (train / "reward_records.jsonl").write_text("".join(json.dumps(x) + "\n" for x in records), encoding="utf-8")
    (train / "log.jsonl").write_text("".join(json.dumps(x) + "\n" for x in log), encoding="utf-8")
    write_json(train / "adapter_delta.json", {"schema": "factrl.adapter_delta/1", "tensors": 12,
                                              "changed": adapter_changed, "relative_change": 0.004 * adapter_changed,
                                              "max_abs_change": 0.001})
    return Path(run_dir)


def eval_samples(n: int, correct: list[bool] | None = None, *, seed: int = 0,
                 answers: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """samples.jsonl rows with every field the evaluator writes (id, question, completion, answer,
    references, correct, na, refusal, empty, format_ok, answer_words, completion_words); `correct` per question
    (default: every third), `answers` replaces answers by index (e.g. a hedge)."""
    rows = []
    for i in range(n):
        right = correct[i] if correct is not None else i % 3 == 0
        answer = (answers or {}).get(i) or (f"gold{i}" if right else ("" if i % 7 == 3 else f"wrong{i}"))
        na = answer == ""
        rows.append({"id": f"q{i}", "question": f"Question number {i}?", "references": [f"gold{i}"],
                     "completion": f"<think>I recall it.</think><answer>{answer}</answer>", "answer": answer,
                     "correct": bool(right and not na), "na": na, "refusal": False, "empty": na,
                     "format_ok": not na, "answer_words": len(answer.split()),
                     "completion_words": 3 + len(answer.split())})
    return rows
