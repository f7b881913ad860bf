"""The PPO engine's shared-prefix forward against the plain one: time per pass and agreement.

    python benchmarks/bench_shared_prefix.py [--model smollm2-135m] [--method rlfh] [--repeats 1]

Builds the PPO trainer as `harness run method=M model=X` does (the policy LoRA, the LoRA critic,
the protocol's batch: 2 questions x 4 completions x <= 64 tokens on SmolLM2), generates one
rollout of the demo pool, then times on that batch, with the shared prefix on and off
(`PPOTrainer.use_shared_prefix`, harness/training/shared_prefix.py):

- policy: the log-probs of the completion tokens, forward and backward (one epoch's policy pass);
- critic: the values, forward and backward (one epoch's critic pass);
- no-grad: the rollout's log-probs, reference log-probs and values (three forwards).

It prints seconds per pass (the best of `--repeats`), the speed-up, and the largest difference
of log-probs, values and gradients between the two forwards. The reward is a constant (it is not
what is timed).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _trainer(model: str, method: str, out: Path):
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.core.method import RewardOutput
    from factrl.harness.pool import load_pool
    from factrl.harness.training.args import lora_config, ppo_args
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.ppo import PPOSettings, PPOTrainer

    cfg = compose([f"method={method}", f"model={model}"])
    identity = models.resolve(cfg.model)
    tokenizer = models.load_tokenizer(identity, cfg.model)
    rows = load_pool(cfg.pool)
    dataset = build_dataset(rows, cfg.model, tokenizer=tokenizer)

    def reward(*, completion_ids, **_):
        return RewardOutput([[0.1] * len(ids) for ids in completion_ids])

    settings = PPOSettings.from_config(cfg.train)
    trainer = PPOTrainer(model=models.load_model(identity, cfg.model), args=ppo_args(cfg, out, settings),
                         train_dataset=dataset, processing_class=tokenizer, peft_config=lora_config(cfg.lora),
                         method_reward=reward, reward_name="constant", ppo=settings, lora_config=lora_config(cfg.lora))
    q, c = int(cfg.train.questions_per_step), int(cfg.train.completions_per_question)
    return trainer, [dataset[i] for i in range(q) for _ in range(c)]


def _timed(fn, repeats: int):
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--method", default="rlfh")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    trainer, rows = _trainer(args.model, args.method, Path(tempfile.mkdtemp(prefix="bench_shared_prefix_")))
    started = time.perf_counter()
    batch = trainer._generate_and_score_completions(rows)
    print(f"rollout (generation, 3 no-grad passes, reward): {time.perf_counter() - started:.1f} s")
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    width = batch["completion_ids"].size(1)
    completion = batch["completion_mask"].float()
    print(f"batch: {ids.size(0)} rows x {ids.size(1)} positions ({ids.size(1) - width} prompt, {width} completion)")
    actor = [p for n, p in trainer.model.named_parameters() if "lora_" in n and ".critic." not in n]
    peft_model = trainer.accelerator.unwrap_model(trainer.model)

    def policy():
        trainer.model.zero_grad()
        logps = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, width, compute_entropy=True)[0]
        (logps * completion).sum().backward()
        return logps.detach(), [p.grad.clone() for p in actor]

    def critic():
        for p in trainer.critic.parameters():
            p.grad = None
        with trainer.critic.body_context():
            values = trainer.critic.values(ids, mask, width)
            (values * completion).sum().backward()
        return values.detach(), [p.grad.clone() for p in trainer.critic.parameters()]

    def no_grad():
        with torch.no_grad():
            logps = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, width)[0]
            with peft_model.disable_adapter():
                ref = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, width)[0]
            return logps, ref, trainer.critic.values(ids, mask, width)

    seconds, outputs = {}, {}
    for shared in (False, True):
        trainer.use_shared_prefix(shared)
        for name, fn in (("policy", policy), ("critic", critic), ("no-grad", no_grad)):
            seconds[name, shared], outputs[name, shared] = _timed(fn, args.repeats)
    print(f"{'pass':<10}{'plain s':>9}{'shared s':>10}{'speed-up':>10}")
    for name in ("policy", "critic", "no-grad"):
        plain, shared = seconds[name, False], seconds[name, True]
        print(f"{name:<10}{plain:9.2f}{shared:10.2f}{plain / shared:9.2f}x")
    epoch = (seconds["policy", False] + seconds["critic", False], seconds["policy", True] + seconds["critic", True])
    print(f"one PPO epoch (policy + critic passes): {epoch[0]:.2f} s -> {epoch[1]:.2f} s ({epoch[0] / epoch[1]:.2f}x)")

    def largest(a, b):
        if isinstance(a, torch.Tensor):
            return float((a - b).abs().max())
        return max(largest(x, y) for x, y in zip(a, b))

    for name in ("policy", "critic", "no-grad"):
        print(f"{name}: largest |shared - plain| {largest(outputs[name, True], outputs[name, False]):.2e}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
