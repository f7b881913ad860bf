"""PPO (LoRA critic) against token-level GRPO: step time and peak memory, same batch and model.

    python benchmarks/bench_ppo.py [--model tiny-llama] [--steps 4] [--questions 2] [--completions 4]
                                   [--critic lora|full]

Each engine trains in its own child process (so one's memory never counts for the other)
with the same model, pool, seed, batch geometry (Q x C completions per optimizer step) and
generation limit; PPO runs one epoch per rollout, so one optimizer step of each engine sees
one fresh batch: generation, reward, reference log-probs, and for PPO also the critic's
values at rollout and its value loss in the update. The first step is a warm-up and is
dropped. Peak memory: CUDA max_memory_allocated during training on a GPU; on a CPU the growth
of the process's peak RSS over its RSS before training (coarser: it includes allocator
caching). Targets: PPO / GRPO step time <= 2.0, peak memory <= 1.3.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent


def _rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def child(engine: str, args: argparse.Namespace) -> dict:
    """Train `args.steps` optimizer steps with one engine; returns its step times and peak memory."""
    import torch
    from transformers import TrainerCallback

    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.args import grpo_args, lora_config
    from factrl.harness.training.grpo import TokenGRPOTrainer
    from factrl.harness.training.ppo import PPOSettings, PPOTrainer
    from factrl.harness.training.args import ppo_args

    sys.path.insert(0, str(REPO))
    from tests.core.toy_training import Toy
    from tests.ppo.toy_ppo import ToyPPO

    class StepClock(TrainerCallback):
        def __init__(self):
            self.times, self._start = [], 0.0

        def on_step_begin(self, a, state, control, **kw):
            self._start = time.perf_counter()

        def on_step_end(self, a, state, control, **kw):
            self.times.append(time.perf_counter() - self._start)

    cfg = compose([f"model={args.model}", f"train.steps={args.steps}", f"train.questions_per_step={args.questions}",
                   f"train.completions_per_question={args.completions}", "train.save_steps=100000",
                   "train.ppo.epochs=1", f"train.ppo.critic={args.critic}"])
    identity = models.resolve(cfg.model)
    tokenizer = models.load_tokenizer(identity, cfg.model)
    dataset = build_dataset(load_pool(cfg.pool), cfg.model, tokenizer=tokenizer)
    clock = StepClock()
    out = Path(tempfile.mkdtemp(prefix=f"bench-ppo-{engine}-"))
    common = dict(model=models.load_model(identity, cfg.model), train_dataset=dataset, processing_class=tokenizer,
                  peft_config=lora_config(cfg.lora), callbacks=[clock])
    if engine == "ppo":
        settings = PPOSettings.from_config(cfg.train)
        critic_model = models.load_model(identity, cfg.model) if args.critic == "full" else None
        trainer = PPOTrainer(args=ppo_args(cfg, out, settings), method_reward=ToyPPO(cfg.method).build_reward(None),
                             reward_name="toyppo", ppo=settings, lora_config=lora_config(cfg.lora),
                             critic_model=critic_model, **common)
    else:
        trainer = TokenGRPOTrainer(args=grpo_args(cfg, out), method_reward=Toy(cfg.method).build_reward(None),
                                   reward_name="toy", **common)
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        base = _rss_bytes()
    trainer.train()
    if cuda:
        torch.cuda.synchronize()
        peak, measure = torch.cuda.max_memory_allocated(), "cuda max_memory_allocated"
    else:
        peak, measure = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base, "cpu peak RSS growth"
        base = 0
    shutil.rmtree(out, ignore_errors=True)  # checkpoints are not part of the measurement
    return {"engine": engine, "times": clock.times, "peak_bytes": peak, "base_bytes": base, "measure": measure}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-llama")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--questions", type=int, default=2)
    parser.add_argument("--completions", type=int, default=4)
    parser.add_argument("--critic", default="lora", choices=("lora", "full"))
    parser.add_argument("--child", choices=("grpo", "ppo"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("BENCH " + json.dumps(child(args.child, args)))
        return 0
    results = {}
    for engine in ("grpo", "ppo"):
        cmd = [sys.executable, __file__, "--child", engine, "--model", args.model, "--steps", str(args.steps),
               "--questions", str(args.questions), "--completions", str(args.completions), "--critic", args.critic]
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
        line = next((x for x in proc.stdout.splitlines() if x.startswith("BENCH ")), None)
        if proc.returncode or line is None:
            print(proc.stderr[-3000:], file=sys.stderr)
            return 1
        results[engine] = json.loads(line[len("BENCH "):])
    print(f"model={args.model} Q={args.questions} C={args.completions} steps={args.steps} (first dropped) "
          f"critic={args.critic} memory: {results['ppo']['measure']}")
    step = {}
    for engine, r in results.items():
        times = r["times"][1:] or r["times"]
        step[engine] = statistics.mean(times)
        print(f"  {engine:<5} step {step[engine]:.3f} s   peak memory {r['peak_bytes'] / 2**20:.1f} MiB   "
              f"steps: {' '.join(f'{t:.2f}' for t in r['times'])}")
    time_ratio = step["ppo"] / step["grpo"]
    mem_ratio = results["ppo"]["peak_bytes"] / max(results["grpo"]["peak_bytes"], 1)
    print(f"  PPO / GRPO step time   {time_ratio:.2f}  (target <= 2.0)")
    print(f"  PPO / GRPO peak memory {mem_ratio:.2f}  (target <= 1.3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
