"""Leaderboard settings, read without Hydra.

`configs/leaderboard/default.yaml` is also `harness run`'s `leaderboard` group (enabled,
store, version); `configs/leaderboard/layout/paper.yaml` is the table layout (method labels
and order, focus and reference methods; the sets' labels, order and Macro come from the name
registry), read only here so that editing a label
never changes a run's config hash. `harness leaderboard publish --layout FILE` replaces it.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from factrl.harness.errors import ConfigError

FALLBACK: dict[str, Any] = {
    "enabled": True,
    "store": "leaderboard.sqlite",
    "version": None,
    "focus_method": None,  # neutral: no method is "(ours)" unless `publish --focus M` asks
    "reference_method": "corver",
    "raw_method": "raw",
    "set_labels": {},  # relabels only; the sets' labels, order and Macro are their registry entries
    "method_labels": {},
    "reported": ["corver-paper"],  # reported results shown beside measured rows (reported.py); [] = none
    "vs_raw_table": True,  # the difference-to-Raw view of the accuracy table (tables/ci.py)
}


def _packaged(*parts: str) -> dict[str, Any]:
    try:
        text = resources.files("factrl.configs").joinpath(*parts).read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return {}
    return yaml.safe_load(text) or {}


def load(layout: str | Path | None = None) -> dict[str, Any]:
    """Store defaults and table layout, with FALLBACK for any key the files lack."""
    data = {**_packaged("leaderboard", "default.yaml"), **_packaged("leaderboard", "layout", "paper.yaml")}
    if layout is not None:
        try:
            custom = yaml.safe_load(Path(layout).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as err:
            raise ConfigError(f"--layout {layout}: cannot read it ({err}); pass a YAML file like "
                              "configs/leaderboard/layout/paper.yaml.") from None
        if not isinstance(custom, dict):
            raise ConfigError(f"--layout {layout}: must be a mapping like configs/leaderboard/layout/paper.yaml.")
        data.update(custom)
    return {**FALLBACK, **{k: v for k, v in data.items() if v is not None or k == "version"}}
