"""The scorer registry: `get_scorer(name, **options)`, lazy "module:Class" entries.

Names are unique; a typo gets a "did you mean". A scorer takes only the options in its
`OPTIONS`; an option it does not take is an error when it is set to anything but its
harness-wide default (`UNSET`), because a silently dropped option makes a result look like
something it is not (e.g. `--truthfulqa-no-comment` with `--scorer corver-official`).
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

from factrl.harness.errors import HarnessError, did_you_mean

from .base import Scorer

# Every scorer option the harness exposes (eval.<key> in configs/eval/base.yaml, flags of
# `harness score`), with the value it has when nobody sets it: passing that value to a scorer
# that does not take the option changes nothing, so it is not an error.
UNSET: dict[str, Any] = {"truthfulqa_no_comment": False, "truthfulqa_content_guard": True}

_SCORERS: dict[str, str] = {}


def register_scorer(name: str, target: str) -> None:
    """Register "package.module:Class" (imported on first use) under `name`."""
    if name in _SCORERS:
        raise HarnessError(f"scorer '{name}' is registered twice; choose another name.")
    _SCORERS[name] = target


register_scorer("default", "factrl.evals.scorers.default:DefaultScorer")
# The compatibility code loads only when asked for.
register_scorer("corver-official", "factrl.evals.scorers.corver_official:CorverOfficialScorer")


def scorer_names() -> list[str]:
    return sorted(_SCORERS)


def scorer_class(name: str) -> type[Scorer]:
    """The registered class; unknown names raise a HarnessError with a suggestion."""
    if name not in _SCORERS:
        raise HarnessError(f"unknown scorer '{name}'.{did_you_mean(name, _SCORERS)} "
                           f"Available: {', '.join(sorted(_SCORERS))}.")
    module, attr = _SCORERS[name].split(":")
    return getattr(import_module(module), attr)


def unused_options(name: str, options: dict[str, Any]) -> list[str]:
    """Keys of `options` that scorer `name` does not take and that are set away from `UNSET`."""
    takes = scorer_class(name).OPTIONS
    return [key for key, value in options.items()
            if key not in takes and not (key in UNSET and value == UNSET[key])]


def get_scorer(name: str, **options) -> Scorer:
    """A scorer instance with the options it takes (options at their `UNSET` value are dropped)."""
    cls = scorer_class(name)
    unused = unused_options(name, options)
    if unused:
        users = [n for n in _SCORERS if unused[0] in scorer_class(n).OPTIONS]
        raise HarnessError(f"scorer '{name}' does not use the option {unused[0]}="
                           f"{options[unused[0]]!r}; drop it"
                           + (f" or use a scorer that does ({', '.join(users)})." if users else "."))
    return cls(**{k: v for k, v in options.items() if k in cls.OPTIONS})
