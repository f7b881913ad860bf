"""Reward-robustness probe: a method's real reward on a versioned panel of
constructed completions, next to an honest correct and an honest wrong answer. See README.md.

Library use (e.g. in a plugin's tests): `probe_method(cfg, rows=..., n=...)` -> ProbeResult,
`result.verdicts()`; tables with `write_tables([result, ...], out_dir)`.
"""
from __future__ import annotations

from .panel import PANEL_VERSION, entries, entry_names
from .runner import BREACH_SHARE, DEFAULT_QUESTIONS, ProbeResult, TypeStats, completion_return, probe_method
from .tables import csv_text, html_table, load_results, markdown, write_tables


__all__ = ["BREACH_SHARE", "DEFAULT_QUESTIONS", "PANEL_VERSION", "ProbeResult", "TypeStats", "completion_return",
           "csv_text", "entries", "entry_names", "html_table", "load_results", "markdown", "probe_method",
           "write_tables"]
