"""No-signal completions in the training log: one counted line per step instead of TRL's warning.

When every reward function returns None for a completion, TRL 1.16's GRPOTrainer warns
"All reward functions returned None for the following kwargs: ..." with the completion's whole
prompt, completion and dataset row: on a judge-based method with a weak judge that is pages of
text per step and says nothing about why. The harness's reward adapter (token_reward._TokenReward) knows
why (RewardOutput.no_signal_reasons, and an empty completion itself), so it counts the reasons
and logs one line per step, e.g.

    step 3: no signal for 5 of 8 completions (judge_failed 4, format 1)

and `TrlNoneWarningFilter`, a logging filter on TRL's GRPO trainer logger, drops TRL's warning.
A filter, not a patch: TRL's source stays as installed, and only that one message is dropped.
"""
from __future__ import annotations

import logging
import re
from collections import Counter
from typing import Sequence

TRL_LOGGER = "trl.trainer.grpo_trainer"
TRL_MESSAGE = "All reward functions returned None"
# accelerate's MultiProcessAdapter (TRL's logger) writes "[RANK 0] " before the message on multi-GPU setups.
_TRL_PATTERN = re.compile(r"^(\[RANK \d+\] )?" + re.escape(TRL_MESSAGE))
EMPTY = "empty_completion"   # no tokens: no signal whatever the method returned (token_reward.py)
UNSTATED = "unstated"        # the method returned None and gave no reason (RewardOutput.no_signal_reasons)


class TrlNoneWarningFilter(logging.Filter):
    """Drops TRL's "All reward functions returned None ..." record; lets every other one through."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _TRL_PATTERN.match(str(record.msg))


_FILTER = TrlNoneWarningFilter()


def install_filter() -> None:
    """Put the filter on TRL's GRPO trainer logger (once; idempotent)."""
    logger = logging.getLogger(TRL_LOGGER)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


def reason_of(value: object, reason: str | None, completion_ids: Sequence[int]) -> str | None:
    """Why one completion has no signal (None when it has one): empty, the method's, unstated."""
    if value is not None:
        return None
    if not completion_ids:
        return EMPTY
    return str(reason) if reason else UNSTATED


def reasons_of(returns: Sequence[object], reasons: Sequence[str | None] | None,
               completion_ids: Sequence[Sequence[int]]) -> Counter:
    """How many completions had no signal, by reason (empty completion, the method's, unstated)."""
    counts: Counter = Counter()
    for b, value in enumerate(returns):
        why = reason_of(value, reasons[b] if reasons is not None else None, completion_ids[b])
        if why is not None:
            counts[why] += 1
    return counts


def step_line(step: int | None, total: int, counts: Counter) -> str:
    """'step 3: no signal for 5 of 8 completions (judge_failed 4, format 1)'."""
    missing = sum(counts.values())
    why = ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    where = f"step {step}: " if step is not None else ""
    return f"{where}no signal for {missing} of {total} completions ({why})"
