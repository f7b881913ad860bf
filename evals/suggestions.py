"""The "did you mean" hint of every evals registry (sets, scorers).

difflib's ratio misses a short name that starts a longer one ("corver" scores 0.57 against
"corver-official", under its 0.6 cutoff), so a name that is the start of exactly one
registered name is suggested first.
"""
from __future__ import annotations

from difflib import get_close_matches
from typing import Iterable


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """' Did you mean 'x'?' for the closest of `known`, or '' when nothing is close."""
    known = list(known)
    starts = [k for k in known if k.lower().startswith(str(name).lower())] if name else []
    hint = starts if len(starts) == 1 else get_close_matches(str(name), known, n=1)
    return f" Did you mean '{hint[0]}'?" if hint else ""
