"""`load_nli(cfg) -> NLIScorer`: the one way methods get an NLI scorer (docs/CONTRACTS.md)."""
from __future__ import annotations

from typing import Any

from ...core.registry import get
from .base import NLIScorer
from .config import parse_config


def load_nli(cfg: Any = None) -> NLIScorer:
    """Build the scorer a config names (`NLISettings` fields; None = the embedded stand-in).

    Model backends load their weights here, once; `score()` then only runs forward passes.
    """
    settings = parse_config(cfg)
    return get("nli", settings.backend)(settings)  # the registry's `nli` entry: (NLISettings) -> NLIScorer
