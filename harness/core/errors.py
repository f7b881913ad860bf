"""One exception type for problems a user can fix, and the "did you mean" hint they carry.

The CLI prints a `HarnessError` as a single line (what is wrong, what is valid, how to fix
it) and exits with status 2; anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

from difflib import get_close_matches
from typing import Iterable


class HarnessError(Exception):
    """A user-facing error: bad input, missing asset, invalid option."""

    exit_code = 2


class ConfigError(HarnessError):
    """A configuration value or file is invalid."""


class SettingError(ConfigError, ValueError):
    """A settings value or key that fails its check (harness/core/settings.py). Also a ValueError,
    as the settings dataclasses' own `__post_init__` checks are."""


class RewardContractError(HarnessError, ValueError):
    """A method's reward broke the reward contract (harness/core/method.py): not a RewardOutput, or
    the wrong number of values. One line naming the method and the fix; also a ValueError."""


class ModelNotFoundError(HarnessError):
    """A model id or path cannot be resolved offline."""


class DataError(HarnessError):
    """A data file (pool, evaluation set, predictions) is malformed."""


def closest(name: str, known: Iterable[str]) -> str | None:
    """The one name of `known` that `name` most likely meant, or None when nothing is close.

    difflib's ratio misses a short name that starts a longer one ("corver" scores 0.57 against
    "corver-official", under its 0.6 cutoff), so a name that is the start of exactly one known
    name is taken first.
    """
    known = [str(k) for k in known]
    text = str(name)
    starts = [k for k in known if k.lower().startswith(text.lower())] if text else []
    hint = starts if len(starts) == 1 else get_close_matches(text, known, n=1)
    return hint[0] if hint else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """' Did you mean 'x'?' for the closest of `known`, or '' when nothing is close."""
    hint = closest(name, known)
    return f" Did you mean '{hint}'?" if hint else ""


__all__ = ["ConfigError", "DataError", "HarnessError", "ModelNotFoundError", "RewardContractError", "SettingError",
           "closest", "did_you_mean"]
