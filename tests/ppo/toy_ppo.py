"""A toy PPO method and a train entry point for the PPO engine tests.

Run as a script (`python -m tests.ppo.toy_ppo RUN_DIR [overrides...]`) so a test can kill the
process after a checkpoint and start it again.
"""
from __future__ import annotations

import sys
from pathlib import Path

from factrl.harness.core.method import Method, RewardOutput


class ToyPPO(Method):
    """Sparse per-token rewards: +1 on a token whose id is a multiple of 3, -1 on the last token
    when the completion has an even number of tokens, 0 elsewhere."""

    name = "toyppo"
    algorithm = "ppo"
    description = "test method with per-token PPO rewards"

    def build_reward(self, ctx):
        def reward(*, prompts, completions, completion_ids, rows, **kwargs):
            out = []
            for ids in completion_ids:
                r = [1.0 if token % 3 == 0 else 0.0 for token in ids]
                if r and len(ids) % 2 == 0:
                    r[-1] -= 1.0
                out.append(r)
            return RewardOutput(out, {"tokens": sum(map(len, completion_ids)) / max(len(completion_ids), 1)},
                                [{"question": row["question"]} for row in rows])

        return reward


def train_toy_ppo(run_dir: Path, overrides: list[str]):
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.core.timer import Timer
    from factrl.harness.training.engine import train

    cfg = compose(["model=tiny-llama", *overrides])
    identity = models.resolve(cfg.model)
    timer = Timer(Path(run_dir) / "timings.json")
    result = train(cfg, ToyPPO(cfg.method), identity, Path(run_dir), load_pool(cfg.pool), timer=timer)
    timer.write()
    return result


if __name__ == "__main__":
    print(train_toy_ppo(Path(sys.argv[1]), sys.argv[2:]).adapter_dir)
