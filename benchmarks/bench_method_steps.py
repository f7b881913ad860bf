"""Reward and training-step cost of KnowRL, RLFH and FoRAG with judge=reference, against CorVer, in one run.

    python benchmarks/bench_method_steps.py [--model smollm2-135m] [--steps 3] [--methods corver,knowrl,rlfh,forag]
                                            [--rounds 1] [--out DIR]

Each method trains `--steps` real steps in a process of its own: `harness run method=M judge=reference
stage=train train.steps=N` (the real trainer: TRL's GRPO, or the harness's PPO engine for RLFH and
FoRAG, with their 4 PPO epochs per rollout and the LoRA critic), with the embedded model's CPU
settings (configs/protocol/model/smollm2-135m.yaml: 2 questions x 4 completions x <= 64 tokens),
the demo pool, seed 42, a fresh output folder and no leaderboard. From each run's timings.json:

- reward s/step: the `reward` phase (the method's reward call: judge items, evidence, NLI,
  alignment) per rollout;
- step s/step: every timed phase but init (rollout, reward, update, save; PPO's critic) per
  rollout: what one step of the comparison costs.

Ratios divide by CorVer's figures from the same invocation (the first method named must be
corver). `--rounds R` repeats the methods R times, interleaved (corver, knowrl, ..., corver, ...),
so a change of machine load hits every method alike; medians over rounds are printed. Target:
every step ratio <= 3.0 (a judge-based step on the reference judge costs about what a CorVer step
does). The reward ratio is printed beside it but not held to the target: CorVer's reward is a few
hundredths of a second, so a ratio of two such figures (RLFH's includes building the row's BM25
index once per run) says nothing about what a step costs.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = 3.0
TARGETED = ("knowrl", "rlfh", "forag")  # the judge-based methods the target is for; others are shown for scale


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_method(method: str, model: str, steps: int, out: Path) -> dict[str, float]:
    """Train `steps` steps of `method`; its timings.json figures per step."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.setdefault("OMP_NUM_THREADS", "2")
    command = [sys.executable, "-m", "factrl.harness.engine.cli", "run", f"method={method}", f"model={model}",
               "judge=reference", "stage=train", f"train.steps={steps}", f"output_dir={out}", "leaderboard.enabled=false"]
    started, cpu = time.monotonic(), _children_cpu()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)  # noqa: S603 -- our CLI
    if done.returncode != 0:
        raise SystemExit(f"{method}: harness run exited {done.returncode}:\n{done.stderr[-3000:]}")
    (run_dir,) = [p for p in out.iterdir() if (p / "timings.json").is_file()]
    phases = json.loads((run_dir / "timings.json").read_text())["phases"]
    seconds = {name: float(p["seconds"]) for name, p in phases.items()}
    # Every phase but init: rollout, reward, update, save, and PPO's critic (its value loss and step).
    step = sum(v for name, v in seconds.items() if name != "init")
    return {"reward": seconds["reward"] / steps, "step": step / steps, "wall": time.monotonic() - started,
            "cpu": _children_cpu() - cpu,  # the whole run's CPU seconds (init included): steadier under load
            **{f"{k}_s": v for k, v in seconds.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--methods", default="corver,knowrl,rlfh,forag")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="keep the run directories here (default: a temp dir)")
    args = parser.parse_args()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods or methods[0] != "corver" or args.steps < 1 or args.rounds < 1:
        parser.error("--methods must start with corver (the ratios' reference); --steps and --rounds >= 1")
    root = args.out or Path(tempfile.mkdtemp(prefix="bench_method_steps_"))
    results: dict[str, list[dict[str, float]]] = {m: [] for m in methods}
    load = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for method in methods:
            out = root / f"round{r}-{method}"
            out.mkdir(parents=True, exist_ok=True)
            results[method].append(run_method(method, args.model, args.steps, out))
            load.append(os.getloadavg()[0])
            got = results[method][-1]
            print(f"  round {r + 1} {method:<7} reward {got['reward']:7.2f} s/step  step {got['step']:7.2f} s/step "
                  f"(wall {got['wall']:.0f} s, CPU {got['cpu']:.0f} s, load {load[-1]:.2f})", flush=True)

    def med(method: str, key: str) -> float:
        return statistics.median(x[key] for x in results[method])

    base_reward, base_step = med("corver", "reward"), med("corver", "step")
    print(f"\n{args.model}, judge=reference, {args.steps} step(s) x {args.rounds} round(s); load average "
          f"{min(load):.2f}-{max(load):.2f} (os.getloadavg, 1 min)")
    print(f"{'method':<8} {'reward s/step':>14} {'x corver':>9} {'step s/step':>12} {'x corver':>9}  step target <= {TARGET:g}x")
    failed = []
    for method in methods:
        reward, step = med(method, "reward"), med(method, "step")
        r_ratio = reward / base_reward if base_reward > 0 else float("nan")
        s_ratio = step / base_step if base_step > 0 else float("nan")
        ok = method not in TARGETED or s_ratio <= TARGET
        if not ok:
            failed.append(method)
        print(f"{method:<8} {reward:14.3f} {r_ratio:9.2f} {step:12.2f} {s_ratio:9.2f}  {('ok' if ok else 'OVER') if method in TARGETED else ''}")
    print(f"runs: {root}")
    if failed:
        raise SystemExit(f"over {TARGET:g}x CorVer: {', '.join(failed)}")


if __name__ == "__main__":
    main()
