"""A toy method that reads the policy inside its reward (interface 2), and a train entry point.

Run as a script (`python -m tests.core.toy_policy_training RUN_DIR [overrides...]`) so a test
can kill the process mid-run and start it again. The reward is Toy's (tokens divisible by 3),
so groups differ and the policy's adapter moves; each call records how far the frozen copy
"snap" is from zero (sum |lora_B|) and one teacher-forced log-prob under it, so a test can see
the copy being mixed at checkpoints and restored on resume.
"""
from __future__ import annotations

import sys
from pathlib import Path

from factrl.harness.core.method import Method, RewardOutput

COPY = "snap"


class PolicyToy(Method):
    name = "policytoy"
    algorithm = "grpo"
    description = "test method reading the policy"
    needs_policy = True

    def __init__(self, config=None):
        super().__init__(config)
        self.checkpoints: list[int] = []

    def setup_policy(self, policy):
        policy.copy_adapter(COPY)

    def on_checkpoint(self, policy, *, step):
        self.checkpoints.append(step)
        policy.mix_adapter(COPY, keep=0.5)

    def build_reward(self, ctx):
        def reward(*, prompts, completions, completion_ids, rows, policy=None, **kwargs):
            assert policy is not None, "the trainer passed no policy"
            b_sum = float(sum(v.double().abs().sum() for k, v in policy.state_of(COPY).items() if "lora_B" in k))
            lp = policy.target_logprobs([completion_ids[0][:1] or [1]], [[5, 6]], adapter=COPY)[0]
            returns = [[float(token % 3 == 0) for token in ids] for ids in completion_ids]
            records = [{"copy_b_abs_sum": b_sum, "copy_logprob": float(lp.sum()), "question": rows[0]["question"]}]
            return RewardOutput(returns, {"copy_b_abs_sum": b_sum}, records)

        return reward


def train_policy_toy(run_dir: Path, overrides: list[str]):
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.training.engine import train

    cfg = compose(["model=tiny-llama", *overrides])
    return train(cfg, PolicyToy(cfg.method), models.resolve(cfg.model), Path(run_dir), load_pool(cfg.pool))


if __name__ == "__main__":
    print(train_policy_toy(Path(sys.argv[1]), sys.argv[2:]).adapter_dir)
