"""One CorVer GRPO step at the demo shape on the CPU: the harness's fast path against its stock path
and against TRL's own GRPOTrainer, each in a process of its own, in one run.

    python benchmarks/bench_cpu_step.py [--steps 2] [--rounds 2] [--variants trl,stock,fast,floor] [--model smollm2-135m]
        [--threads N] [--out FILE]

Variants (same model, LoRA, pool, seed, batch of Q questions x C completions, completion limit,
learning rate and torch threads; each warms up one step, then `--steps` steps are measured):
  trl    the anchor: TRL 1.16's stock GRPOTrainer with a plain response-level reward (the
         harness's correctness + format reward as one scalar per completion)
  stock  the harness's CorVer step on TRL's stock HF path (train.rollout.merge_lora, shared_prefill
         and grouped_sdpa false, train.logprob.head=fused, train.logprob.shared_prefix=false): the
         step before the fast path
  fast   the harness's CorVer step with its defaults (merged, oneDNN-prepacked rollouts with fused
         sibling projections and grouped-query SDPA; plain LM head and shared prompt prefix for
         the log-probs)
  floor  after the rounds: what float32 decoding cannot go below here, every linear of one decode
         step on the fast path's weights alone and one read of those weights (`linear_floor`),
         turned into the most rollout tokens/s a rollout made of nothing else could reach

Per step: generation, the other rollout passes (reference / old-policy log-probs), the reward,
the loss's forward, the backward, the optimizer, and the whole step; generated tokens/s (the
completions' real tokens, padding left out) over the generation and over the whole rollout.
`--rounds` runs every variant that many times, alternating: each round's ratios compare processes
minutes apart, and the report gives their median and each round's (a shared or throttled machine
drifts by tens of percent over the run; the phase table is the mean over all rounds). The
stock and fast variants draw the same completions for the same seed (the fast path keeps the
numbers: tests/core/test_fast_step.py); the report says whether they did. Targets (the issue that
asked for it): rollout tokens/s >= 5x the stock path's, the whole step >= 3x faster than the stock
path, and not slower than TRL's stock trainer.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
STOCK = ["train.rollout.merge_lora=false", "train.rollout.shared_prefill=false", "train.rollout.grouped_sdpa=false",
         "train.logprob.head=fused", "train.logprob.shared_prefix=false"]
VARIANTS = {"trl": [], "stock": STOCK, "fast": []}
PHASES = ("generate", "logps_rollout", "reward", "forward", "backward", "optimizer", "step")


def _instrument(trainer, reward_fn):
    """Wrap the trainer's phases on this instance; returns (per-step records, wrapped reward)."""
    from transformers import TrainerCallback

    steps: list[dict] = []
    current: dict = defaultdict(float)

    def timed(name, fn, *, key=None):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                label = key(*args, **kwargs) if key else name
                current[label] += time.perf_counter() - start
        return wrapper

    original_generate = trainer._generate_single_turn

    def generate(*args, **kwargs):
        start = time.perf_counter()
        ids, logprobs = original_generate(*args, **kwargs)
        current["generate"] += time.perf_counter() - start
        current["tokens"] += sum(len(x) for x in ids)
        current["decode_steps"] += max((len(x) for x in ids), default=0)  # one forward per token of the longest row
        current["completions"] += len(ids)
        current["sample"] = [list(map(int, x)) for x in ids]
        return ids, logprobs

    trainer._generate_single_turn = generate
    trainer._get_per_token_logps_and_entropies = timed(
        "logps", trainer._get_per_token_logps_and_entropies,
        key=lambda *a, **k: "forward" if torch_grad() else "logps_rollout")
    trainer.accelerator.backward = timed("backward", trainer.accelerator.backward)

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            current.clear()
            current["_start"] = time.perf_counter()

        def on_pre_optimizer_step(self, args, state, control, **kwargs):
            current["_opt"] = time.perf_counter()

        def on_optimizer_step(self, args, state, control, **kwargs):
            current["optimizer"] += time.perf_counter() - current.pop("_opt")

        def on_step_end(self, args, state, control, **kwargs):
            record = dict(current)
            record["step"] = time.perf_counter() - record.pop("_start")
            steps.append(record)

    trainer.add_callback(Clock())

    def reward(*args, **kwargs):
        start = time.perf_counter()
        try:
            return reward_fn(*args, **kwargs)
        finally:
            current["reward"] += time.perf_counter() - start

    return steps, reward


def torch_grad() -> bool:
    import torch

    return torch.is_grad_enabled()


def run_variant(name: str, steps: int, model: str, threads: int) -> dict:
    """One variant in this process; returns its measured steps."""
    import torch

    torch.set_num_threads(threads)
    from trl import GRPOTrainer

    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.core.rewards import response_rewards
    from factrl.harness.training.args import grpo_args, lora_config
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.grpo import TokenGRPOTrainer
    from factrl.harness.training.settings import LogprobSettings, RolloutSettings
    from factrl.methods.corver import CorVerSettings, reward_from_config
    from factrl.methods.corver.extractor import build_extractor

    cfg = compose([f"model={model}", "method=corver", "method.extractor.backend=heuristic",
                   f"train.steps={steps + 1}", "train.save_steps=1000", *VARIANTS[name]])
    identity = models.resolve(cfg.model)
    tokenizer = models.load_tokenizer(identity, cfg.model)
    dataset = build_dataset(load_pool(cfg.pool), cfg.model, tokenizer=tokenizer)
    with tempfile.TemporaryDirectory() as tmp:
        args = grpo_args(cfg, Path(tmp))
        common = dict(model=models.load_model(identity, cfg.model), args=args, train_dataset=dataset,
                      processing_class=tokenizer, peft_config=lora_config(cfg.lora))
        if name == "trl":
            response_cfg = CorVerSettings.from_mapping(cfg.method).response

            def response_only(*, prompts, completions, completion_ids, **kwargs):
                rows = [{"answers": a} for a in kwargs["answers"]]
                texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
                return response_rewards(completions=texts, rows=rows, completion_ids=completion_ids,
                                        config=response_cfg).total

            holder: dict = {}

            def reward(*a, **k):
                return holder["fn"](*a, **k)

            reward.__name__ = "response"
            trainer = GRPOTrainer(reward_funcs=[reward], **common)
            records, holder["fn"] = _instrument(trainer, response_only)
        else:
            corver = reward_from_config(cfg.method, tokenizer=tokenizer, corpus_cfg=cfg.corpus,
                                        extractor=build_extractor(cfg.method.extractor))
            holder = {}
            trainer = TokenGRPOTrainer(method_reward=lambda **k: holder["fn"](**k), reward_name="corver",
                                       rollout=RolloutSettings.from_mapping(cfg.train.rollout),
                                       logprob=LogprobSettings.from_mapping(cfg.train.logprob), **common)
            records, holder["fn"] = _instrument(trainer, corver)
        trainer.train()
    shape = {"questions": int(cfg.train.questions_per_step), "completions": int(cfg.train.completions_per_question),
             "max_completion_length": int(cfg.train.max_completion_length), "lora_r": int(cfg.lora.r),
             "learning_rate": float(cfg.train.learning_rate)}
    return {"variant": name, "threads": threads, "shape": shape, "steps": records}


def linear_floor(model_name: str, rows: int, threads: int, repeats: int = 30) -> dict:
    """What float32 decoding cannot go below here: the time of every linear layer of one decode
    step at `rows` rows on the fast path's merged, prepacked, fused weights (nothing else of the
    step: no attention, sampler or Python), and the time to read those weights once (a sum: the
    memory's own rate). Medians over `repeats` passes, fresh inputs each pass."""
    import torch
    from peft import get_peft_model

    torch.set_num_threads(threads)
    from factrl.harness.engine.config import compose
    from factrl.harness.services import models
    from factrl.harness.services.models.merged_linears import fast_decoding
    from factrl.harness.training.args import lora_config

    cfg = compose([f"model={model_name}", "method=corver"])
    model = get_peft_model(models.load_model(models.resolve(cfg.model), cfg.model), lora_config(cfg.lora)).eval()
    linears, passes, reads = [], [], []
    with torch.no_grad(), fast_decoding(model, rows=rows):
        for module in model.modules():
            if "forward" in vars(module):  # the layers fast_decoding computes (merged, prepacked, fused)
                base = getattr(module, "base_layer", module)
                linears.append((module, base.weight.shape[1]))
        weights = [getattr(m, "base_layer", m).weight.detach() for m, _ in linears]
        for _ in range(repeats + 3):  # 3 warm-up passes
            inputs = {w: torch.randn(rows, 1, w) for w in {width for _, width in linears}}
            start = time.perf_counter()
            for module, width in linears:
                module(inputs[width])  # siblings share an input object, so a fused group computes once
            passes.append(time.perf_counter() - start)
            start = time.perf_counter()
            for weight in weights:
                weight.sum()
            reads.append(time.perf_counter() - start)
    return {"variant": "floor", "rows": rows, "linears": len(linears),
            "weight_bytes": sum(w.numel() * w.element_size() for w in weights),
            "linears_s": statistics.median(passes[3:]), "read_s": statistics.median(reads[3:])}


def _floor_report(floor: dict, stock: dict, fast: dict) -> dict:
    """Upper bounds on float32 rollout speed from the measured floor: the rollout's real tokens
    (stock and fast draw the same) over as many decode steps as the fast path ran, each costing
    only its linears (or only one read of their weights), with no prefill, attention, sampler or
    log-prob pass, against the stock path's rollout tokens/s."""
    steps, tokens = fast["decode_steps"], fast["tokens"]
    bound = {key: tokens / (steps * floor[key]) for key in ("linears_s", "read_s")}
    out = {"decode_step_ms": 1000 * fast["generate"] / steps, "linears_ms": 1000 * floor["linears_s"],
           "read_ms": 1000 * floor["read_s"], "weight_mb": floor["weight_bytes"] / 2**20,
           "max_rollout_x_linears": bound["linears_s"] / stock["rollout_tokens_per_s"],
           "max_rollout_x_read": bound["read_s"] / stock["rollout_tokens_per_s"]}
    print(f"float32 floor here ({floor['linears']} linears, {out['weight_mb']:.0f} MiB of weights, {floor['rows']} rows): "
          f"a fast decode step takes {out['decode_step_ms']:.1f} ms (generation / decode steps), its linears alone {out['linears_ms']:.1f} ms, "
          f"one read of their weights {out['read_ms']:.1f} ms; a rollout doing nothing but those would reach at most "
          f"x{out['max_rollout_x_linears']:.2f} (linears) / x{out['max_rollout_x_read']:.2f} (read) the stock "
          f"rollout's tokens/s")
    return out


def _summary(runs: list[dict]) -> dict:
    """Means over the measured steps of `runs` (one variant's processes; each warms up one step)."""
    measured = [step for run in runs for step in run["steps"][1:]]
    mean = lambda key: statistics.mean(s.get(key, 0.0) for s in measured)  # noqa: E731
    out = {key: mean(key) for key in PHASES}
    out["tokens"] = mean("tokens")
    out["decode_steps"] = mean("decode_steps")
    rollout = out["generate"] + out["logps_rollout"] + out["reward"]
    out["rollout"] = rollout
    out["gen_tokens_per_s"] = out["tokens"] / out["generate"] if out["generate"] else 0.0
    out["rollout_tokens_per_s"] = out["tokens"] / rollout if rollout else 0.0
    out["seconds_per_token"] = out["step"] / out["tokens"] if out["tokens"] else 0.0
    return out


def _run(name: str, args: argparse.Namespace, *extra: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--variant", name, "--steps", str(args.steps),
                           "--model", args.model, "--threads", str(args.threads), *extra],
                          capture_output=True, text=True, env=env, cwd=REPO)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if proc.returncode or line is None:
        sys.exit(f"variant {name} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    print(f"{name}: done in {time.perf_counter() - start:.0f} s (process wall, load included)", flush=True)
    return json.loads(line[len("RESULT "):])


def _per_round(results: dict, a: str, b: str, ratio) -> list[float]:
    """ratio(summary of a, summary of b) for each round: both sides ran minutes apart at most, so a
    machine whose speed drifts over a run moves both alike."""
    return [ratio(_summary([x]), _summary([y])) for x, y in zip(results[a], results[b])]


def _spread(values: list[float]) -> str:
    median = statistics.median(values)
    return f"x{median:.2f}" + (f" (rounds: {', '.join(f'{v:.2f}' for v in values)})" if len(values) > 1 else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2, help="measured steps per variant (after one warm-up)")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--variants", default="trl,stock,fast,floor",
                        help="floor: the float32 floor of a decode step here (its linears alone), after the rounds")
    parser.add_argument("--rounds", type=int, default=2,
                        help="runs of every variant, alternating; ratios are taken per round and their median reported")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out" / "bench_cpu_step.json")
    parser.add_argument("--rows", type=int, default=8, help=argparse.SUPPRESS)  # internal: the floor's rows
    parser.add_argument("--variant", help=argparse.SUPPRESS)  # internal: run one variant, print JSON
    args = parser.parse_args()
    if args.variant == "floor":
        print("RESULT " + json.dumps(linear_floor(args.model, args.rows, args.threads)), flush=True)
        return
    if args.variant:
        print("RESULT " + json.dumps(run_variant(args.variant, args.steps, args.model, args.threads)), flush=True)
        return
    names = [n for n in args.variants.split(",") if n != "floor"]
    results: dict[str, list[dict]] = {name: [] for name in names}
    for _ in range(args.rounds):  # the variants alternate, so each round compares neighbours in time
        for name in names:
            results[name].append(_run(name, args))
    summary = {name: _summary(runs) for name, runs in results.items()}
    floor = None
    if "floor" in args.variants.split(",") and "fast" in results:
        shape = results["fast"][0]["shape"]
        floor = _run("floor", args, "--rows", str(shape["questions"] * shape["completions"]))
    shape = results[names[0]][0]["shape"]
    print(f"\nCorVer GRPO step, {args.model}, {shape['questions']} questions x {shape['completions']} completions, "
          f"<= {shape['max_completion_length']} tokens, LoRA r {shape['lora_r']}, {args.threads} threads, "
          f"{args.rounds} round(s) of {args.steps} measured steps after 1 warm-up (means over all rounds)")
    header = f"{'phase (s)':<22}" + "".join(f"{n:>10}" for n in summary)
    print(header)
    for key in (*PHASES, "rollout", "tokens", "decode_steps", "gen_tokens_per_s", "rollout_tokens_per_s"):
        print(f"{key:<22}" + "".join(f"{s[key]:>10.2f}" for s in summary.values()))
    verdicts: dict = {}
    if "stock" in summary and "fast" in summary:
        rollout = _per_round(results, "stock", "fast", lambda s, f: f["rollout_tokens_per_s"] / s["rollout_tokens_per_s"])
        generation = _per_round(results, "stock", "fast", lambda s, f: f["gen_tokens_per_s"] / s["gen_tokens_per_s"])
        step = _per_round(results, "stock", "fast", lambda s, f: s["step"] / f["step"])
        same = all([r.get("sample") for r in s_run["steps"]] == [r.get("sample") for r in f_run["steps"]]
                   for s_run, f_run in zip(results["stock"], results["fast"]))
        verdicts.update(rollout_tokens_per_s_vs_stock=statistics.median(rollout), rollout_rounds=rollout,
                        step_speedup_vs_stock=statistics.median(step), step_rounds=step,
                        same_completions_as_stock=same)
        print(f"\nfast vs stock path (median of the rounds): rollout tokens/s {_spread(rollout)} (target >= 5), "
              f"generation tokens/s {_spread(generation)}, whole step {_spread(step)} faster (target >= 3); "
              f"same sampled completions in every step: {'yes' if same else 'NO'}")
        if floor is not None:
            verdicts["float32_floor"] = _floor_report(floor, summary["stock"], summary["fast"])
    if "trl" in summary and "fast" in summary:
        step = _per_round(results, "trl", "fast", lambda t, f: f["step"] / t["step"])
        token = _per_round(results, "trl", "fast", lambda t, f: f["seconds_per_token"] / t["seconds_per_token"])
        verdicts.update(step_ratio_fast_over_trl=statistics.median(step),
                        seconds_per_token_ratio_fast_over_trl=statistics.median(token))
        print(f"fast vs TRL's stock GRPOTrainer: step time ratio {_spread(step)[1:]} (target <= 1), per generated "
              f"token {_spread(token)[1:]} (the two draw different completions after the first update)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "verdicts": verdicts, "runs": results, "floor": floor}, indent=1) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
