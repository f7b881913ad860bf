"""After `harness grid` ran its cells: did every trained method receive a signal?

A method whose reward returned None ("no signal": a judge reply that did not parse, a row without
evidence, a completion the method cannot place, ...) for most of its completions trained on what
little was left; its row beside the others would compare a method with a broken reward. For each
finished cell that trained, the share of no-signal completions is read from its training log
(`train/log.jsonl`: `rewards/<method>/no_signal` per rollout, and `rewards/<method>/no_signal/<reason>`
by reason, harness/training/signal_log.py); above `signal.max_no_signal_share` (configs/grid/
_defaults.yaml: 0.5; a grid file or `--max-no-signal` overrides it) the grid exits 1 with one line
per method: its share, the threshold, the main reason and the likely fix.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .expand import Grid

# The likely fix per reason (RewardOutput.no_signal_reasons; signal_log.EMPTY / UNSTATED).
FIXES = {
    "judge_failed": "the judge's replies do not parse: use judge=reference (the embedded models' default) or a "
                    "stronger served judge (judge=openai judge.base_url=... judge.model=...)",
    "no_evidence": "the pool's rows have no evidence in the store: give the rows titles the store holds "
                   "(evidence=file evidence.store=...) or a pool built with that store",
    "alignment": "the completions cannot be aligned with their tokens: check the model's chat template and "
                 "response_prefix (model.*)",
    "unmatched_echo": "the completions do not hold the echoed response: check the model's response_prefix",
    "empty_completion": "the model stops at once: raise train.max_completion_length or check the model's "
                        "chat template and EOS",
    "unscored": "the reward could not score the completions' fact term: check the evidence store and NLI backend",
    "format": "the completions are out of format: use a model that follows the <think>/<answer> format "
              "(model.demonstration=true helps small models)",
}
DEFAULT_FIX = "see the method's reward diagnostics in train/log.jsonl and run.log"


@dataclass
class SignalShare:
    method: str
    run_dir: Path
    share: float           # no-signal completions / completions, over the run's rollouts
    rollouts: int
    reasons: dict[str, float] = field(default_factory=dict)  # share of all completions, by reason

    @property
    def main_reason(self) -> str | None:
        return max(self.reasons, key=lambda r: (self.reasons[r], r)) if self.reasons else None


def no_signal_share(run_dir: Path, method: str) -> SignalShare | None:
    """The run's no-signal share from train/log.jsonl; None when it did not train (raw, eval-only).

    Every rollout has the same number of completions (Q x C), so the mean of the per-rollout
    shares is the share of all completions."""
    path = Path(run_dir) / "train" / "log.jsonl"
    if not path.is_file():
        return None
    key = f"rewards/{method}/no_signal"
    shares: list[float] = []
    reasons: dict[str, float] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(entry, dict) or key not in entry:
            continue  # PPO epochs after the rollout's first log no reward
        shares.append(float(entry[key]))
        for name, value in entry.items():
            if name.startswith(key + "/"):
                reason = name[len(key) + 1:]
                reasons[reason] = reasons.get(reason, 0.0) + float(value)
    if not shares:
        return None
    return SignalShare(method, Path(run_dir), sum(shares) / len(shares), len(shares),
                       {r: v / len(shares) for r, v in reasons.items()})


def failure_line(item: SignalShare, threshold: float) -> str:
    reason = item.main_reason
    why = f", mostly {reason} ({item.reasons[reason]:.0%} of completions)" if reason else ""
    fix = FIXES.get(reason or "", DEFAULT_FIX)
    return (f"no signal: method {item.method} had no reward signal for {item.share:.1%} of its training completions "
            f"(threshold signal.max_no_signal_share={threshold:g}){why}; likely fix: {fix} ({item.run_dir})")


def check_signal(grid: "Grid", threshold: float) -> tuple[list[SignalShare], list[str]]:
    """The shares of the grid's finished trained cells, and one failure line per cell above `threshold`."""
    shares = []
    for cell in grid.cells:
        if cell.status != "done" or cell.run_dir is None:
            continue
        item = no_signal_share(cell.run_dir, cell.method)
        if item is not None:
            shares.append(item)
    return shares, [failure_line(s, threshold) for s in shares if s.share > threshold]


def summary_line(item: SignalShare) -> str:
    reasons = ", ".join(f"{r} {v:.0%}" for r, v in sorted(item.reasons.items()))
    return f"  signal: {item.method:<8} no signal {item.share:6.1%} over {item.rollouts} rollout(s)" + \
        (f" ({reasons})" if reasons else "")
