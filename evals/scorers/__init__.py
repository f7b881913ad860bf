"""Scorers: turn a set's completions into per-sample records and metrics.

One file per scorer: `default` (default.py) implements docs/PROTOCOL.md §6; `corver-official`
(corver_official.py) reproduces the released CorVer evaluation script for comparison. The
interface is in base.py, the lookup by name in registry.py (names: factrl.harness.core.registry).
"""
from __future__ import annotations

from .base import Scorer
from .registry import get_scorer, scorer_class, scorer_names, unused_options

__all__ = ["Scorer", "get_scorer", "scorer_class", "scorer_names", "unused_options"]
