"""The GRPO ratio clip: train.epsilon_low / train.epsilon_high reach TRL's GRPOConfig (epsilon /
epsilon_high; TRL then clips the ratio to [1 - low, 1 + high]); bad bounds are one-line errors."""
from __future__ import annotations

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.core.errors import ConfigError
from factrl.harness.training.args import grpo_args


def test_clip_bounds_reach_grpo_config(tmp_path):
    default = grpo_args(compose(["model=tiny-llama"]), tmp_path)
    assert (default.epsilon, default.epsilon_high) == (0.2, None)  # TRL: epsilon_high None = epsilon
    asymmetric = grpo_args(compose(["model=tiny-llama", "train.epsilon_low=0.1", "train.epsilon_high=0.2"]), tmp_path)
    assert (asymmetric.epsilon, asymmetric.epsilon_high) == (0.1, 0.2)


@pytest.mark.parametrize("override", ["train.epsilon_low=0", "train.epsilon_high=-0.1"])
def test_bad_clip_bounds(tmp_path, override):
    with pytest.raises(ConfigError, match="train.epsilon_low=.*must be > 0"):
        grpo_args(compose(["model=tiny-llama", override]), tmp_path)
