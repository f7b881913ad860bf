"""Scorers by name: `get_scorer(name, **options)`, over the name registry's `scorers` kind.

The names live in factrl.harness.core.registry (builtin.py; plugins: the `harness.scorers` entry
points), lazy "module:Class" entries; a typo gets a "did you mean". A scorer takes only the options in its
`OPTIONS`; an option it does not take is an error when it is set to anything but its
harness-wide default (`UNSET`), because a silently dropped option makes a result look like
something it is not (e.g. `--truthfulqa-no-comment` with `--scorer corver-official`).
"""
from __future__ import annotations

from typing import Any

from factrl.harness.core import registry
from factrl.harness.core.errors import HarnessError
from factrl.harness.core.settings import defaults_from_yaml

from .base import Scorer

# Every scorer option the harness exposes (eval.<key> in configs/eval/base.yaml, flags of
# `harness score`), with the value it has when nobody sets it: passing that value to a scorer
# that does not take the option changes nothing, so it is not an error.
SCORER_OPTIONS = ("truthfulqa_no_comment", "truthfulqa_content_guard")
UNSET: dict[str, Any] = {key: defaults_from_yaml("eval/base.yaml")[key] for key in SCORER_OPTIONS}


def scorer_names() -> list[str]:
    return registry.names("scorers")


def scorer_class(name: str) -> type[Scorer]:
    """The registered class; unknown names raise a HarnessError with a suggestion."""
    cls = registry.get("scorers", name)
    if not (isinstance(cls, type) and issubclass(cls, Scorer)):
        raise HarnessError(f"scorer '{name}' ({registry.entry('scorers', name).target}) is not a "
                           "factrl.evals.scorers.base.Scorer subclass.")
    return cls


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
        users = [n for n in scorer_names() if unused[0] in scorer_class(n).OPTIONS]
        raise HarnessError(f"scorer '{name}' does not use the option {unused[0]}="
                           f"{options[unused[0]]!r}; drop it"
                           + (f" or use a scorer that does ({', '.join(users)})." if users else "."))
    return cls(**{k: v for k, v in options.items() if k in cls.OPTIONS})
