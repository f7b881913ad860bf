"""RLCR's format warm-up: the SFT stage of the paper's SFT+RLCR variant, as a stand-in for a small
model that does not follow the format (the harness runs it where `model.format_warmup` is true:
the embedded SmolLM2-135M; harness/training/format_warmup.py).

A target is the policy's own greedy answer in the whole tabc format the reward checks:
`<think>...</think><answer>own answer</answer> <analysis>ANALYSIS</analysis> <confidence>c</confidence>`.
- the answer is the last answer block of the policy's own greedy completion (none: no target), so
  no gold reaches a target: the hook is never given one;
- the think text is the completion's own when it closed a think block with plain text of at most
  THINK_CHARS characters, else THINK;
- c is drawn per example from the one-decimal grid of `confidence` ([0.1, 0.9] by default) with the
  run's seeded RNG: it carries no correctness information, so RL starts with stated confidences that
  vary within a group and has something to shape;
- every target is checked with the reward's own format rule (scoring.format_ok): one that fails is
  skipped.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from factrl.harness.core.settings import Settings

from . import scoring

ANALYSIS = "I answered from memory and did not check it."  # fixed: it says nothing about this answer
THINK = "I recall the answer."
THINK_CHARS = 160
# `method.format_warmup.*`, RLCR_DEFAULTS["format_warmup"] (reward.py): the one place of these defaults.
WARMUP_DEFAULTS = {
    "steps": 8,             # AdamW steps; 0: no warm-up. Runs only where model.format_warmup is true
    "examples": 16,         # targets collected from the pool's first questions (at most 4x as many tried)
    "batch_size": 4,
    "learning_rate": 5.0e-4,
    "confidence": [0.1, 0.9],  # the stated confidences drawn (one-decimal grid), independent of correctness
}


@dataclass(frozen=True)
class FormatWarmupSettings(Settings):
    """`method.format_warmup.*` (RLCR_DEFAULTS["format_warmup"] documents each key)."""

    OWNER = "method.format_warmup"
    DEFAULTS = WARMUP_DEFAULTS
    RANGES = {"steps": "[0, inf)", "examples": "[1, inf)", "batch_size": "[1, inf)", "learning_rate": "(0, 1]",
              "confidence": "[0, 1]"}

    steps: int
    examples: int
    batch_size: int
    learning_rate: float
    confidence: tuple[float, float]

    def __post_init__(self) -> None:
        low, high = self.confidence
        if not low <= high:
            raise ValueError(f"confidence={list(self.confidence)}: give [low, high] with low <= high")
        if not grid(low, high):
            raise ValueError(f"confidence={list(self.confidence)} holds no one-decimal value; widen it, e.g. [0.1, 0.9]")


def grid(low: float, high: float) -> list[float]:
    """The one-decimal confidences in [low, high]."""
    return [k / 10 for k in range(11) if low - 1e-9 <= k / 10 <= high + 1e-9]


def target(turn: str, *, question: str, rng: random.Random, pattern: str, confidence: tuple[float, float]) -> str | None:
    """The warm-up target for the policy's greedy `turn` (response prefix in front), or None."""
    del question  # the question is in the prompt; the target is built from the turn only
    answer = " ".join(scoring.last_answer(turn).split())
    if not answer:
        return None
    think = THINK
    body = turn[len("<think>"):] if turn.startswith("<think>") else turn
    if "</think>" in body:
        own = " ".join(body.split("</think>", 1)[0].split())
        if own and len(own) <= THINK_CHARS and "<" not in own and ">" not in own:
            think = own
    value = rng.choice(grid(*confidence))
    text = (f"<think>{think}</think><answer>{answer}</answer> <analysis>{ANALYSIS}</analysis> "
            f"<confidence>{value:.1f}</confidence>")
    if pattern == "tac":
        text = f"<think>{think}</think><answer>{answer}</answer> <confidence>{value:.1f}</confidence>"
    return text if scoring.format_ok(text, pattern) else None


__all__ = ["ANALYSIS", "FormatWarmupSettings", "THINK", "WARMUP_DEFAULTS", "grid", "target"]
