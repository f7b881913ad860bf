"""Leaderboard settings, read without Hydra.

`configs/leaderboard/default.yaml` is also `harness run`'s `leaderboard` group (enabled, mode,
store, version: `LeaderboardSettings`); `configs/leaderboard/layout/paper.yaml` is the table layout
(method labels and order, focus and reference methods; the sets' labels, order and Macro come from
the name registry), read only here so that editing a label
never changes a run's config hash. `harness leaderboard publish --layout FILE` replaces it.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from factrl.harness.core.errors import ConfigError
from factrl.harness.core.settings import Settings

MODES = ("store", "rundir")


@dataclass(frozen=True)
class LeaderboardSettings(Settings):
    """`harness run`'s `leaderboard.*` (configs/leaderboard/{default,rundir}.yaml document each key)."""

    OWNER = "leaderboard"
    DEFAULTS = "leaderboard/default.yaml"
    RANGES = {"version": "[1, inf)"}

    enabled: bool  # record the run's rows when it finishes
    mode: str  # store: into `store` | rundir: the run directory only (`harness leaderboard rebuild` later)
    store: str  # the SQLite store, relative to the working directory
    version: int | str | None  # None: the current leaderboard version

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode={self.mode!r}: use store (record to leaderboard.store) or rundir (write only the "
                             f"run directory; `harness leaderboard rebuild` later)")


@dataclass(frozen=True)
class FloorsSettings(Settings):
    """The layout's `floors:` node (configs/leaderboard/layout/paper.yaml documents each key); a
    layout that leaves a key out keeps paper.yaml's."""

    OWNER = "layout.floors"
    DEFAULTS = "leaderboard/layout/paper.yaml:floors"

    enabled: bool
    tricks: bool
    cache: bool
    data_dir: str | None


def layout_defaults() -> dict[str, Any]:
    """The packaged layout (configs/leaderboard/layout/paper.yaml): what a layout's absent key means."""
    return _packaged("leaderboard", "layout", "paper.yaml")


def _packaged(*parts: str) -> dict[str, Any]:
    text = resources.files("factrl.configs").joinpath(*parts).read_text(encoding="utf-8")
    return yaml.safe_load(text) or {}


def load(layout: str | Path | None = None) -> dict[str, Any]:
    """The store settings (configs/leaderboard/default.yaml) and the table layout
    (configs/leaderboard/layout/paper.yaml, or `layout`, whose absent keys keep paper.yaml's)."""
    data = {**LeaderboardSettings.from_mapping().to_dict(), **layout_defaults()}
    if layout is not None:
        try:
            custom = yaml.safe_load(Path(layout).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as err:
            raise ConfigError(f"--layout {layout}: cannot read it ({err}); pass a YAML file like "
                              "configs/leaderboard/layout/paper.yaml.") from None
        if not isinstance(custom, dict):
            raise ConfigError(f"--layout {layout}: must be a mapping like configs/leaderboard/layout/paper.yaml.")
        data.update({k: v for k, v in custom.items() if v is not None or k in ("version", "focus_method")})
    return data
