"""One cleanup rule for every reward: a reward object's `close()` runs once, at the end, through
RunContext.build_reward, whichever path built it (the engine, the probe); no method registers it."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.core.method import Method, RewardOutput, RunContext
from factrl.harness.probe import probe_method

from .conftest import POOL

ROOT = Path(__file__).resolve().parents[2]


class ClosingReward:
    """A reward object with resources to release, as CorVer's (its counter) or FSPO's (its store)."""

    def __init__(self):
        self.closed = 0

    def __call__(self, *, completion_ids, **kwargs):
        return RewardOutput([[0.5] * len(ids) for ids in completion_ids])

    def close(self):
        self.closed += 1


class Closing(Method):
    name = "closing"
    algorithm = "grpo"
    description = "a reward that must be closed"

    def build_reward(self, ctx):
        self.reward = ClosingReward()
        return self.reward


def test_build_reward_registers_close_once_and_a_plain_function_needs_none(tmp_path):
    ctx = RunContext(config=compose(["model=tiny-llama"]), run_dir=tmp_path)
    method = Closing()
    reward = ctx.build_reward(method)
    assert reward is method.reward and reward.closed == 0  # nothing closes before the end
    ctx.close()
    ctx.close()
    assert reward.closed == 1

    class Plain(Method):
        name, algorithm, description = "plain", "grpo", "a function reward"

        def build_reward(self, ctx):
            return lambda **kwargs: None

    other = RunContext(config=compose(["model=tiny-llama"]), run_dir=tmp_path)
    assert callable(other.build_reward(Plain()))
    other.close()  # no close(), nothing registered, nothing fails


def test_the_probe_closes_the_reward_it_built(llama_tokenizer):
    method = Closing()
    result = probe_method(compose(["model=tiny-llama"]), rows=POOL, n=2, tokenizer=llama_tokenizer, method=method)
    assert result.stats and method.reward.closed == 1


@pytest.mark.parametrize("folder", ["harness", "methods", "plugins/nover/factrl_nover"])
def test_rewards_are_built_and_closed_through_one_path(folder):
    # Only RunContext.build_reward calls a method's build_reward, and no method registers its own
    # reward's close: otherwise a path that forgets it (or closes twice) could come back.
    stray = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            where = f"{path.relative_to(ROOT)} line {node.lineno}"
            receiver = node.func.value
            if node.func.attr == "build_reward" and path.name != "method.py" \
                    and not (isinstance(receiver, ast.Name) and receiver.id == "ctx"):
                stray.append(f"{where}: calls build_reward (use ctx.build_reward(method))")
            if node.func.attr == "on_close" and any(isinstance(a, ast.Attribute) and a.attr == "close"
                                                    and isinstance(a.value, ast.Name) and a.value.id == "reward"
                                                    for a in node.args):
                stray.append(f"{where}: registers reward.close itself (RunContext.build_reward does)")
    assert stray == []
