"""CorVer's reward overhead on a training step, against vanilla TRL GRPO, in one process.

    python benchmarks/bench_corver_step.py [--model smollm2-135m] [--steps 3] [--questions 2] [--completions 4]

Baseline: TRL's own GRPOTrainer with a response-level reward (the harness's correctness +
format reward as one scalar per completion). CorVer: the harness's token-level trainer with
the CorVer reward (heuristic extractor, demo corpus index, alignment). Same model, pool,
seed, batch geometry and generation limit. Prints the mean step time of each, their ratio,
and CorVer's breakdown: generation (rollout), extraction, lookup, alignment, the rest of the
reward, and update. Target: reward overhead under 10% of the step, one batched
extractor call per step.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from transformers import TrainerCallback  # noqa: E402


class StepClock(TrainerCallback):
    """Wall time of each optimizer step (generation included)."""

    def __init__(self):
        self.times: list[float] = []
        self._start = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.times.append(time.perf_counter() - self._start)


class CountingExtractor:
    """Wraps an extractor to count its batched calls (the issue asks for one per step)."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def extract(self, *args, **kwargs):
        self.calls += 1
        return self.inner.extract(*args, **kwargs)


def main() -> None:
    import torch
    from trl import GRPOTrainer

    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.core.rewards import response_rewards
    from factrl.methods.corver import CorVerSettings
    from factrl.harness.core.timer import Timer
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.args import grpo_args, lora_config
    from factrl.harness.training.grpo import TokenGRPOTrainer
    from factrl.methods.corver import reward_from_config
    from factrl.methods.corver.extractor import build_extractor

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--steps", type=int, default=3, help="measured steps (after one warm-up step)")
    parser.add_argument("--questions", type=int, default=2)
    parser.add_argument("--completions", type=int, default=4)
    parser.add_argument("--max-completion-length", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

    cfg = compose([f"model={args.model}", "method=corver", "method.extractor.backend=heuristic",
                   f"train.steps={args.steps + 1}", f"train.questions_per_step={args.questions}",
                   f"train.completions_per_question={args.completions}",
                   f"train.max_completion_length={args.max_completion_length}", "train.save_steps=1000"])
    identity = models.resolve(cfg.model)
    tokenizer = models.load_tokenizer(identity, cfg.model)
    dataset = build_dataset(load_pool(cfg.pool), cfg.model, tokenizer=tokenizer)
    response_cfg = CorVerSettings.from_mapping(cfg.method).response

    def response_only(*, prompts, completions, completion_ids, **kwargs):
        rows = [{"answers": a} for a in kwargs["answers"]]
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        return response_rewards(completions=texts, rows=rows, completion_ids=completion_ids,
                                config=response_cfg).total

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        clock = StepClock()
        vanilla = GRPOTrainer(model=models.load_model(identity, cfg.model), args=grpo_args(cfg, Path(tmp) / "v"),
                              train_dataset=dataset, processing_class=tokenizer, peft_config=lora_config(cfg.lora),
                              reward_funcs=[response_only], callbacks=[clock])
        vanilla.train()
        results["vanilla"] = clock.times[1:]

        extractor = CountingExtractor(build_extractor(cfg.method.extractor))
        reward = reward_from_config(cfg.method, tokenizer=tokenizer, corpus_cfg=cfg.corpus, extractor=extractor)
        diagnostics: list[dict] = []
        inner_call = reward.__call__

        def recording_reward(**kwargs):
            out = inner_call(**kwargs)
            diagnostics.append(out.diagnostics)
            return out

        timer = Timer()
        clock = StepClock()
        corver = TokenGRPOTrainer(model=models.load_model(identity, cfg.model), args=grpo_args(cfg, Path(tmp) / "c"),
                                  train_dataset=dataset, processing_class=tokenizer,
                                  peft_config=lora_config(cfg.lora), method_reward=recording_reward,
                                  reward_name="corver", timer=timer, callbacks=[clock])
        with timer.phase("update"):
            corver.train()
        results["corver"] = clock.times[1:]

    v, c = statistics.mean(results["vanilla"]), statistics.mean(results["corver"])
    measured = diagnostics[1:]
    mean = lambda key: statistics.mean(d.get(key, 0.0) for d in measured)  # noqa: E731
    extraction, lookup, alignment = mean("extractor_seconds"), mean("lookup_seconds"), mean("alignment_seconds")
    reward_total = mean("seconds")
    phases = timer.to_dict()["phases"]
    steps = args.steps + 1
    print(f"model {args.model}, {args.questions} questions x {args.completions} completions, "
          f"<= {args.max_completion_length} tokens, {args.steps} measured steps (+1 warm-up), "
          f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
    print(f"vanilla TRL GRPO step   {v:8.3f} s")
    print(f"CorVer step             {c:8.3f} s   ratio CorVer / vanilla = {c / v:.3f}")
    print("CorVer breakdown per step (mean over all steps for timer phases, measured steps for the reward):")
    print(f"  generation (rollout)  {phases['rollout']['seconds'] / steps:8.3f} s")
    print(f"  update                {phases['update']['seconds'] / steps:8.3f} s")
    print(f"  reward total          {reward_total:8.4f} s  ({100 * reward_total / c:.2f}% of the step)")
    print(f"    extraction          {extraction:8.4f} s")
    print(f"    lookup              {lookup:8.4f} s")
    print(f"    alignment           {alignment:8.4f} s")
    print(f"  extractor calls per step: {extractor.calls / steps:.2f}; sentences per step: {mean('sentences'):.1f}")
    verdict = "meets" if reward_total / c < 0.10 else "MISSES"
    print(f"reward overhead {100 * reward_total / c:.2f}% of the step: {verdict} the < 10% target")


if __name__ == "__main__":
    main()
