"""The method README documents exactly the metric keys the reward logs, in its fixed sections."""
from __future__ import annotations

import re
from pathlib import Path

from factrl.methods import forag
from factrl.methods.forag.reward import DIAGNOSTIC_KEYS

README = Path(forag.__file__).with_name("README.md")
SECTIONS = ("## Paper and citation", "## What changes relative to GRPO", "## Hyperparameters",
            "## Logged metric keys", "## Results against the paper", "## Changelog")


def documented_keys() -> set[str]:
    return set(re.findall(r"`rewards/forag/([a-z0-9_]+)`", README.read_text()))


def test_readme_has_the_fixed_sections():
    text = README.read_text()
    positions = [text.find(s) for s in SECTIONS]
    assert all(p >= 0 for p in positions) and positions == sorted(positions)


def test_documented_keys_are_the_diagnostics():
    assert documented_keys() - {"no_signal"} == set(DIAGNOSTIC_KEYS)  # no_signal: the engine's


def test_hyperparameter_table_covers_the_config():
    from importlib import resources

    from omegaconf import OmegaConf

    cfg = OmegaConf.load(str(resources.files("factrl.configs").joinpath("method", "forag.yaml")))
    text = README.read_text()
    for key in cfg:
        if key != "name":
            assert f"`{key}`" in text, key
