"""Two GRPO steps of the real engine on tiny-llama with a fixed batch of per-token returns.

Run as `python -m tests.distributed.dist_grpo OUT [overrides...]`, alone or under
`torchrun --nproc_per_node 2`. Each process writes OUT/advantages-rank<R>.json: per step, the
global positions of its rows, their question ids and the (B_local, T) advantages the trainer
handed to the loss. The returns are fixed by (step, global position, token), independent of what
was sampled, so one-process and two-process runs see the same batch and must give the same
advantages.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from factrl.harness.core.method import Method, RewardOutput
from factrl.harness.training import distributed

NO_SIGNAL = 5  # global position with no signal: the last row of rank 0, inside a group that straddles ranks


class FixedBatch(Method):
    """Per-token returns from a seeded table indexed by (call, global position, token)."""

    name = "fixedbatch"
    algorithm = "grpo"
    description = "test method: seeded per-token returns"

    def build_reward(self, ctx):
        calls = {"n": 0}

        def reward(*, prompts, completions, completion_ids, rows, **kwargs):
            offset = distributed.rank() * len(completions)  # TRL: rank k holds the k-th consecutive slice
            returns = []
            for b, ids in enumerate(completion_ids):
                g = torch.Generator().manual_seed(1000 * calls["n"] + offset + b)
                table = torch.rand(64, generator=g) * (1 + (offset + b) % 3)
                returns.append(None if offset + b == NO_SIGNAL else table[:len(ids)].tolist())
            calls["n"] += 1
            records = [{"position": offset + b, "id": row["id"]} for b, row in enumerate(rows)]
            return RewardOutput(returns, {}, records)

        return reward


def main(out: Path, overrides: list[str]) -> None:
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.training import engine
    from factrl.harness.training.grpo import TokenGRPOTrainer

    dumps = []
    original = TokenGRPOTrainer._generate_and_score_completions

    def recording(self, inputs):
        # Only records what the real override returns; the computation is the trainer's own.
        output = original(self, inputs)
        n = len(inputs)
        dumps.append({"positions": list(range(distributed.rank() * n, distributed.rank() * n + n)),
                      "ids": [row["id"] for row in inputs], "advantages": output["advantages"].tolist(),
                      "mask": output["completion_mask"].tolist()})
        return output

    TokenGRPOTrainer._generate_and_score_completions = recording
    cfg = compose(["model=tiny-llama", "train.questions_per_step=3", "train.completions_per_question=4",
                   "train.steps=2", "train.save_steps=100", "train.max_completion_length=8", "train.beta=0.0",
                   "train.advantage_std_floor=0.0", *overrides])
    identity = models.resolve(cfg.model)
    # Every completion runs to max_completion_length, so lengths do not depend on what was sampled.
    original_args = engine.grpo_args
    engine.grpo_args = lambda c, o, **kw: original_args(c, o, generation_kwargs={"min_new_tokens": 8}, **kw)
    engine.train(cfg, FixedBatch(cfg.method), identity, out / "run", load_pool(cfg.pool, cfg.eval))
    (out / f"advantages-rank{distributed.rank()}.json").write_text(
        json.dumps({"world_size": distributed.world_size(), "steps": dumps}))


if __name__ == "__main__":
    try:
        main(Path(sys.argv[1]), sys.argv[2:])
    finally:
        distributed.shutdown()
