"""No-signal completions in the training log (harness/training/signal_log.py): the real TRL
trainer's "All reward functions returned None" warning (the whole prompt and row) is dropped, one
counted line per step says how many completions had no signal and why, and the reasons reach
train/log.jsonl, where `harness grid`'s signal check reads them (harness/engine/grid/checks.py)."""
from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path

import pytest

from factrl.harness.core.errors import RewardContractError
from factrl.harness.engine.grid import Cell, Grid
from factrl.harness.engine.grid.checks import FIXES, check_signal, no_signal_share
from factrl.harness.core.method import Method, RewardOutput
from factrl.harness.training import signal_log
from factrl.harness.training.token_reward import _TokenReward


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _collected(name: str):
    handler, logger = _Collect(), logging.getLogger(name)
    old = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)


class _HalfSilent(Method):
    """The first completion of every group gets no signal (a judge failure), the others a reward."""

    name, description = "halfsilent", "test method"

    def build_reward(self, ctx):
        def reward(*, prompts, completions, completion_ids, rows, **kwargs):
            silent = [b % 2 == 0 for b in range(len(completions))]
            returns = [None if s else [1.0 + b] * len(ids) for b, (s, ids) in enumerate(zip(silent, completion_ids))]
            return RewardOutput(returns, no_signal_reasons=["judge_failed" if s else None for s in silent])

        return reward


def test_real_trainer_logs_one_counted_line_instead_of_trls_warning(tmp_path):
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.training.engine import train

    cfg = compose(["model=tiny-llama", "train.steps=1", "train.max_completion_length=8"])
    with _collected(signal_log.TRL_LOGGER) as trl, _collected("factrl.harness.training.grpo") as ours:
        train(cfg, _HalfSilent(), models.resolve(cfg.model), tmp_path / "run", load_pool(cfg.pool))
    assert not [m for m in trl if signal_log.TRL_MESSAGE in m]  # TRL tried (2 of 4 None): dropped
    assert "step 1: no signal for 2 of 4 completions (judge_failed 2)" in ours
    lines = [json.loads(x) for x in (tmp_path / "run" / "train" / "log.jsonl").read_text().splitlines()]
    (entry,) = [e for e in lines if "rewards/halfsilent/no_signal" in e]  # the step's line (then TRL's summary)
    assert entry["rewards/halfsilent/no_signal"] == 0.5 and entry["rewards/halfsilent/no_signal/judge_failed"] == 0.5
    # The grid's check reads the same log: 50% no signal, above a 0.4 threshold, with the judge's fix.
    share = no_signal_share(tmp_path / "run", "halfsilent")
    assert (share.share, share.rollouts, share.main_reason) == (0.5, 1, "judge_failed")
    grid = Grid("t", "t.yaml", [Cell("b", "halfsilent", "tiny-llama", 42, None, (), tmp_path / "run", "done")])
    _, failures = check_signal(grid, 0.4)
    (line,) = failures
    assert "method halfsilent had no reward signal for 50.0% of its training completions" in line
    assert "threshold signal.max_no_signal_share=0.4" in line and FIXES["judge_failed"] in line
    assert check_signal(grid, 0.5)[1] == []  # at the threshold: passes


def test_filter_drops_only_trls_message():
    filt = signal_log.TrlNoneWarningFilter()

    def record(msg):
        return logging.LogRecord(signal_log.TRL_LOGGER, logging.WARNING, __file__, 1, msg, None, None)

    assert not filt.filter(record("All reward functions returned None for the following kwargs:\n{...}"))
    assert not filt.filter(record("[RANK 0] All reward functions returned None for the following kwargs:"))
    assert filt.filter(record("Some other TRL warning"))


def test_reasons_count_empty_and_unstated_completions():
    counts = signal_log.reasons_of([None, [1.0], None, None], ["format", None, None, "format"], [[1], [2], [], [3]])
    assert counts == {"format": 2, signal_log.EMPTY: 1}
    assert signal_log.reasons_of([None], None, [[1]]) == {signal_log.UNSTATED: 1}
    assert signal_log.step_line(3, 8, counts) == "step 3: no signal for 3 of 8 completions (format 2, empty_completion 1)"


def test_reasons_of_the_wrong_length_are_refused():
    def reward(**kwargs):
        return RewardOutput([None], no_signal_reasons=["a", "b"])

    adapter = _TokenReward(reward, "bad", lambda _n: contextlib.nullcontext(), None)
    with pytest.raises(RewardContractError, match="2 no_signal_reasons for 1 completions"):
        adapter(["p"], ["c"], [[5]])
