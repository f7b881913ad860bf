"""The method's reward as TRL sees it: `_TokenReward`, an ordinary TRL reward function.

TRL calls it with every dataset column repeated per completion, so completion b is judged
against its own row (`question`, `answers`, ...). It checks the method's RewardOutput against the
reward contract (one list of per-token returns, or None, per completion), logs the no-signal
counts and the method's diagnostics, appends the reward records (every process's, by rank 0),
and returns the per-completion mean return R_bar (what TRL logs as the reward). It keeps the
per-token returns (`pending`) for the trainer to turn into advantages, and what the rollout log
needs of the batch (`pending_batch`: prompts, texts, rows, token ids, no-signal reasons).
"""
from __future__ import annotations

import json
import logging
import math
from pathlib import Path

from ..core.errors import RewardContractError
from ..core.method import RewardFn, RewardOutput
from .distributed import gather_records
from .signal_log import reason_of, reasons_of, step_line

log = logging.getLogger("factrl.harness.training.grpo")  # the trainer's logger: one place to read its lines

ROW_KEYS = ("id", "question", "answers", "title")


class _TokenReward:
    """Adapter TRL calls as a reward function; stashes per-token returns for the trainer."""

    def __init__(self, reward_fn: RewardFn, name: str, phase, records_path: Path | None):
        self.reward_fn = reward_fn
        self.__name__ = name
        self.phase = phase
        self.records_path = records_path
        self.pending: list[list[float] | None] | None = None
        self.pending_output: RewardOutput | None = None
        self.pending_batch: dict | None = None  # what training/rollout_log.py writes of this call
        self.policy = None  # PolicyHandle for methods with needs_policy (interface 2), else None

    def __call__(self, prompts, completions, completion_ids, **kwargs) -> list[float | None]:
        n = len(completions)
        rows = [{k: kwargs[k][i] for k in ROW_KEYS if k in kwargs} for i in range(n)]
        texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        # The prompt as the policy saw it: the last user turn of a chat prompt, or the formatted text.
        prompt_texts = [p[-1]["content"] if isinstance(p, list) else str(p) for p in prompts]
        ids = [list(map(int, x)) for x in completion_ids]
        with self.phase("reward"):
            out: RewardOutput = self.reward_fn(prompts=prompt_texts, completions=texts, completion_ids=ids, rows=rows,
                                               policy=self.policy)
        where = f"method={self.__name__}: its reward"
        if not isinstance(out, RewardOutput):  # e.g. a TRL-style list of floats
            raise RewardContractError(
                f"{where} returned {type(out).__name__}, not RewardOutput; return "
                f"factrl.harness.core.method.RewardOutput(token_returns=[one list per completion], ...)")
        returns = list(out.token_returns)
        if len(returns) != n:
            raise RewardContractError(f"{where} returned {len(returns)} token-return lists for {n} completions; "
                                      f"return one list (or None) per completion")
        for b, r in enumerate(returns):
            if r is not None and len(r) != len(ids[b]):
                raise RewardContractError(f"{where}: completion {b} has {len(ids[b])} tokens but {len(r)} returns; "
                                          f"return one value per completion token")
        if out.extras is not None and len(out.extras) != n:
            raise RewardContractError(f"{where} returned {len(out.extras)} extras for {n} completions; "
                                      f"return one dict per completion or None")
        if out.no_signal_reasons is not None and len(out.no_signal_reasons) != n:
            raise RewardContractError(f"{where} returned {len(out.no_signal_reasons)} no_signal_reasons for {n} "
                                      f"completions; return one reason (or None) per completion, or None")
        # A completion with no tokens carries no signal, whatever the method returned for it.
        returns = [r if ids[b] else None for b, r in enumerate(returns)]
        self.pending = returns
        self.pending_output = out
        self.pending_batch = {"prompts": prompt_texts, "texts": texts, "rows": rows, "ids": ids,
                              "no_signal": [reason_of(r, out.no_signal_reasons[b] if out.no_signal_reasons else None,
                                                      ids[b]) for b, r in enumerate(returns)]}
        state = kwargs.get("trainer_state")
        missing = reasons_of(returns, out.no_signal_reasons, ids)
        if missing:  # one counted line per step; TRL's own warning is filtered (signal_log.py)
            log.info("%s", step_line(int(state.global_step) + 1 if state is not None else None, n, missing))
        log_metric = kwargs.get("log_metric")
        if log_metric is not None:
            for key, value in out.diagnostics.items():
                if value is not None and not (isinstance(value, float) and math.isnan(value)):
                    log_metric(f"rewards/{self.__name__}/{key}", float(value))
            log_metric(f"rewards/{self.__name__}/no_signal", sum(r is None for r in returns) / max(n, 1))
            for reason, count in missing.items():  # shares of the batch, by reason (the grid's check reads them)
                log_metric(f"rewards/{self.__name__}/no_signal/{reason}", count / max(n, 1))
        # Every process's records, appended by rank 0 alone (collective: all processes call it).
        records = gather_records(out.records)
        if self.records_path is not None and records:
            step = int(state.global_step) + 1 if state is not None else None
            self.records_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.records_path, "a", encoding="utf-8") as handle:  # appended, never rewritten
                for record in records:
                    handle.write(json.dumps({"step": step, **record}, default=str) + "\n")
        return [sum(r) / len(r) if r else None for r in returns]
