"""A toy GRPO method with a format warm-up (Method.format_warmup, interface 7) and a train entry
point, for tests/core/test_format_warmup.py. Run as a script (`python -m
tests.core.toy_warmup_training RUN_DIR [overrides...]`) so a test can kill it and start it again.

The toy's format: `[[w1 w2]] #d`, the first two words of the policy's own greedy completion
between double brackets and a digit drawn from the run's RNG; the hook is given no gold."""
from __future__ import annotations

import sys
from pathlib import Path

from factrl.harness.core.method import FormatWarmup
from tests.core.toy_training import Toy


def toy_target(turn: str, *, question: str, rng) -> str | None:
    words = turn.split()[:2]
    return f"[[{' '.join(words)}]] #{rng.randint(0, 9)}" if words else None


class ToyWarmup(Toy):
    name = "toywarmup"
    description = "test method with a format warm-up"

    def format_warmup(self) -> FormatWarmup:
        return FormatWarmup(steps=6, examples=4, batch_size=2, learning_rate=5e-2, target=toy_target,
                            label="toy format warm-up", note="a test's stand-in", facts={"digits": [0, 9]})


def train_toy_warmup(run_dir: Path, overrides: list[str]) -> Path:
    from factrl.harness.core.timer import Timer
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.services import models
    from factrl.harness.training.engine import train

    cfg = compose(["model=tiny-llama", *overrides])
    timer = Timer(Path(run_dir) / "timings.json")
    result = train(cfg, ToyWarmup(cfg.method), models.resolve(cfg.model), Path(run_dir), load_pool(cfg.pool),
                   timer=timer)
    timer.write()
    return result.adapter_dir


if __name__ == "__main__":
    print(train_toy_warmup(Path(sys.argv[1]), sys.argv[2:]))
