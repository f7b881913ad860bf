"""The plugin README has the method README's fixed sections in order and a fidelity table,
documents exactly the metric keys the reward logs, and names every `method.*` key
(tests/method_readme.py's rules)."""
from __future__ import annotations

from pathlib import Path

import pytest

plugin = pytest.importorskip("factrl_rlcr", reason="factrl-rlcr is not installed (make setup installs it)")
from tests.method_readme import assert_plugin_readme  # noqa: E402


def test_readme_sections_keys_and_settings():
    from factrl_rlcr.reward import RLCR_DEFAULTS

    assert_plugin_readme(Path(__file__).resolve().parents[1] / "README.md", "rlcr", plugin.DIAGNOSTIC_KEYS, RLCR_DEFAULTS)
