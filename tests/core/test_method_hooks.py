"""The method hooks (docs/CONTRACTS.md, "Method hooks"): RewardOutput.extras reaches
Method.shape_advantages with (B, T) tensors, the default hook changes nothing, and
RunContext.on_close cleanups run when training ends, on error too."""
from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from factrl.harness.core.method import Method, RewardOutput, RunContext
from factrl.harness.training.grpo import TokenGRPOTrainer


# --- RunContext.on_close ----------------------------------------------------------------------

def test_on_close_runs_cleanups_last_first_once():
    ctx = RunContext(config=None)
    calls = []
    ctx.on_close(lambda: calls.append("store"))
    ctx.on_close(lambda: calls.append("judge"))
    ctx.close()
    ctx.close()  # a second close finds nothing left to run
    assert calls == ["judge", "store"]


def test_on_close_runs_every_cleanup_and_raises_the_first_failure(caplog):
    ctx = RunContext(config=None)
    calls = []

    def broken():
        calls.append("broken")
        raise OSError("server already gone")

    ctx.on_close(lambda: calls.append("first registered"))
    ctx.on_close(broken)
    with caplog.at_level(logging.WARNING), pytest.raises(OSError, match="already gone"):
        ctx.close()
    assert calls == ["broken", "first registered"]
    assert "cleanup" in caplog.text and "server already gone" in caplog.text
    # While another error propagates the failures are only logged.
    ctx.on_close(broken)
    ctx.close(raise_errors=False)
    with pytest.raises(TypeError, match="callable"):
        ctx.on_close("not callable")


# --- shape_advantages through the trainer's check -----------------------------------------------

class _Flip(Method):
    name, description = "flip", "test method"

    def shape_advantages(self, advantages, *, output, mask, group_size):
        signs = torch.tensor([[e["sign"]] for e in output.extras], dtype=advantages.dtype)
        return advantages.abs() * signs + 5.0  # the +5 lands on padding too: the trainer must clear it


def test_trainer_applies_the_hook_and_clears_padding():
    advantages = torch.tensor([[1.0, -2.0, 0.0], [0.5, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    output = RewardOutput([[0.0, 0.0], [1.0]], extras=[{"sign": -1.0}, {"sign": 1.0}])
    fake = SimpleNamespace(_method=_Flip())
    shaped = TokenGRPOTrainer._shape(fake, advantages, output, mask, 2)
    assert torch.equal(shaped, torch.tensor([[4.0, 3.0, 0.0], [5.5, 0.0, 0.0]]))


def test_default_hook_is_the_identity():
    advantages = torch.tensor([[1.0, -2.0, 0.25]])
    fake = SimpleNamespace(_method=_Plain())
    assert TokenGRPOTrainer._shape(fake, advantages, RewardOutput([[0.0] * 3]), torch.ones(1, 3), 1) is advantages


class _Plain(Method):
    name, description = "plain", "test method"


class _WrongShape(Method):
    name, description = "wrong", "test method"

    def shape_advantages(self, advantages, *, output, mask, group_size):
        return advantages[:, :1]


def test_a_hook_returning_another_shape_is_named():
    fake = SimpleNamespace(_method=_WrongShape())
    with pytest.raises(ValueError, match=r"method 'wrong': shape_advantages returned \(2, 1\).*\(2, 3\)"):
        TokenGRPOTrainer._shape(fake, torch.zeros(2, 3), RewardOutput([[0.0], [0.0]]), torch.ones(2, 3), 2)


# --- through the engine on tiny-llama --------------------------------------------------------------

class _Hooked(Method):
    """Returns per-completion extras, flips every advantage, registers a cleanup; records all."""

    name, description = "hooked", "test method"

    def __init__(self, config=None, fail=False):
        super().__init__(config)
        self.fail = fail
        self.calls: list[dict] = []
        self.closed: list[str] = []

    def build_reward(self, ctx):
        ctx.on_close(lambda: self.closed.append("closed"))

        def reward(*, prompts, completions, completion_ids, rows, **kwargs):
            if self.fail:
                raise RuntimeError("reward exploded")
            returns = [[float(t % 3 == 0) for t in ids] for ids in completion_ids]
            extras = [{"n_tokens": len(ids), "question": row["question"]} for ids, row in zip(completion_ids, rows)]
            return RewardOutput(returns, extras=extras)

        return reward

    def shape_advantages(self, advantages, *, output, mask, group_size):
        self.calls.append({"shape": tuple(advantages.shape), "mask_shape": tuple(mask.shape),
                           "group_size": group_size, "lengths": mask.sum(dim=1).long().tolist(),
                           "extras": output.extras, "before": advantages.clone()})
        return -advantages


def _train(tmp_path: Path, method: Method):
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.training.engine import train

    cfg = compose(["model=tiny-llama", "train.steps=1"])
    return train(cfg, method, models.resolve(cfg.model), tmp_path, load_pool(cfg.pool))


def test_engine_passes_extras_to_the_hook_and_closes(tmp_path):
    method = _Hooked()
    _train(tmp_path / "run", method)
    assert method.closed == ["closed"]
    assert len(method.calls) == 1  # one generation batch for one step
    call = method.calls[0]
    assert call["shape"] == call["mask_shape"] and call["shape"][0] == 4 and call["group_size"] == 2
    # Extras arrive in completion order: one per completion, its own token count and row.
    assert [e["n_tokens"] for e in call["extras"]] == call["lengths"]
    assert call["extras"][0]["question"] == call["extras"][1]["question"]


def test_engine_runs_cleanups_when_training_fails(tmp_path):
    method = _Hooked(fail=True)
    with pytest.raises(RuntimeError, match="reward exploded"):
        _train(tmp_path / "run", method)
    assert method.closed == ["closed"]


def test_extras_of_the_wrong_length_are_refused():
    from factrl.harness.training.token_reward import _TokenReward
    import contextlib

    def reward(**kwargs):
        return RewardOutput([[1.0]], extras=[{}, {}])

    adapter = _TokenReward(reward, "bad", lambda _n: contextlib.nullcontext(), None)
    with pytest.raises(ValueError, match="2 extras for 1 completions"):
        adapter(["p"], ["c"], [[5]])
