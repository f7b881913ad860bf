"""The plugin README has the method README's fixed sections in order, documents exactly the metric
keys the reward logs, and names every `method.*` key (tests/method_readme.py's rules)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

plugin = pytest.importorskip("factrl_binary_rar", reason="factrl-binary_rar is not installed (make setup installs it)")
from tests.method_readme import SECTIONS  # noqa: E402

TEXT = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_readme_has_the_fixed_sections_in_order():
    positions = [TEXT.find(s) for s in SECTIONS]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), positions
    assert "## Fidelity" in TEXT and "| setting | original (source) | ours | |" in TEXT


def test_documented_keys_are_the_diagnostics():
    documented = set(re.findall(r"`rewards/binary_rar/([a-z0-9_]+)`", TEXT))
    assert documented - {"no_signal"} == set(plugin.DIAGNOSTIC_KEYS)


def test_every_setting_is_documented():
    from factrl_binary_rar.reward import BINARY_RAR_DEFAULTS

    assert [k for k in BINARY_RAR_DEFAULTS if f"`{k}`" not in TEXT] == []
