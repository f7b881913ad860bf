"""The PPO engine (LoRA critic) in N processes: each rank records its critic's state per step.

Run as `python -m tests.distributed.dist_ppo OUT [overrides...]` under torchrun. At every
optimizer step (in `_clip_grad_norm`, after the critic's gradients are averaged) each rank
appends the sum of its critic gradients and of its critic and policy weights to
OUT/ppo-rank<R>.json; synchronised replicas give equal numbers on every rank.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from factrl.harness.training import distributed
from factrl.harness.training.ppo import PPOTrainer


def main(out: Path, overrides: list[str]) -> None:
    from tests.ppo.toy_ppo import train_toy_ppo

    steps = []
    original = PPOTrainer._clip_grad_norm

    def recording(self, model):
        norm = original(self, model)  # the real method: averages, then clips
        critic = self.optimizer.param_groups[1]["params"]
        actor = self.optimizer.param_groups[0]["params"]
        with torch.no_grad():
            steps.append({"critic_grad": float(sum(p.grad.double().sum() for p in critic if p.grad is not None)),
                          "critic_grad_abs": float(sum(p.grad.double().abs().sum() for p in critic
                                                       if p.grad is not None)),
                          "critic": float(sum(p.double().sum() for p in critic)),
                          "actor_grad": float(sum(p.grad.double().sum() for p in actor if p.grad is not None)),
                          "actor": float(sum(p.double().sum() for p in actor))})
        return norm

    PPOTrainer._clip_grad_norm = recording
    train_toy_ppo(out / "run", ["train.steps=2", "train.questions_per_step=2", "train.completions_per_question=2",
                                "train.max_completion_length=8", "train.ppo.epochs=1", "train.save_steps=100",
                                "train.ppo.critic_learning_rate=1e-2", "train.warmup_ratio=0",  # step 1 moves
                                *overrides])
    (out / f"ppo-rank{distributed.rank()}.json").write_text(json.dumps(steps))


if __name__ == "__main__":
    try:
        main(Path(sys.argv[1]), sys.argv[2:])
    finally:
        distributed.shutdown()
