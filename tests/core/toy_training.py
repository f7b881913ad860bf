"""A toy GRPO method and a train entry point for the training-engine tests.

Run as a script (`python -m tests.core.toy_training RUN_DIR [overrides...]`) so a test can
kill the process mid-run and start it again.
"""
from __future__ import annotations

import sys
from pathlib import Path

from factrl.harness.core.method import Method, RewardOutput


class Toy(Method):
    """Per-token return: +1 on tokens whose id is a multiple of 3 (varies within and across completions)."""

    name = "toy"
    algorithm = "grpo"
    description = "test method"

    def build_reward(self, ctx):
        def reward(*, prompts, completions, completion_ids, rows, **kwargs):
            returns = [[float(token % 3 == 0) for token in ids] for ids in completion_ids]
            records = [{"question": row["question"], "prompt": prompt, "completion": text[:40]}
                       for row, prompt, text in zip(rows, prompts, completions)]
            return RewardOutput(returns, {"mean_first_token": sum(i[0] for i in completion_ids) / len(completion_ids)},
                                records)

        return reward


def train_toy(run_dir: Path, overrides: list[str]) -> Path:
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.core.timer import Timer
    from factrl.harness.training.engine import train

    cfg = compose(["model=tiny-llama", *overrides])
    identity = models.resolve(cfg.model)
    timer = Timer(Path(run_dir) / "timings.json")
    result = train(cfg, Toy(cfg.method), identity, Path(run_dir), load_pool(cfg.pool), timer=timer)
    timer.write()
    return result.adapter_dir


if __name__ == "__main__":
    print(train_toy(Path(sys.argv[1]), sys.argv[2:]))
