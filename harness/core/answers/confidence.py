"""The stated confidence of a completion: the one reading rule that RLCR's reward and the
evaluator's calibration metrics share.

A confidence is the text of the last `<confidence>...</confidence>` block read as a finite number
in [0, 1] (Python's float() of the block, surrounding whitespace allowed: the RLCR release's
reading, damanimehul/RLCR@8904bed reward_fns.py:38,49-56). MISSING (no block, or an empty one) and
MALFORMED (not a number, "90%", "high", "nan", out of [0, 1]) are never a value. It sits here, in
the answers layer, so that the evaluator reads confidences exactly as the reward does without
importing a plugin.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

MISSING, MALFORMED = "no_confidence", "bad_confidence"
_CONFIDENCE = re.compile(r"<confidence>(.*?)</confidence>", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Stated:
    """The last confidence block: its text (None: no block), its value (a finite number in [0, 1]) or
    why there is none (MISSING, MALFORMED)."""

    text: str | None
    value: float | None
    problem: str | None


def stated_confidence(turn: str) -> Stated:
    """The stated confidence of `turn` (module docstring)."""
    blocks = _CONFIDENCE.findall(turn)
    if not blocks or not blocks[-1].strip():
        return Stated(blocks[-1] if blocks else None, None, MISSING)
    text = blocks[-1]
    try:
        value = float(text)
    except ValueError:
        return Stated(text, None, MALFORMED)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return Stated(text, None, MALFORMED)
    return Stated(text, value, None)


__all__ = ["MALFORMED", "MISSING", "Stated", "stated_confidence"]
