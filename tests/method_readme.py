"""Checks every method README gets (docs/CONTRACTS.md, method READMEs): the fixed sections in order, the documented
`rewards/<name>/<key>` metric keys, and a line for every key of the method's config."""
from __future__ import annotations

import re
from importlib import import_module, resources
from pathlib import Path

SECTIONS = ("## Paper and citation", "## What changes relative to GRPO", "## Hyperparameters",
            "## Logged metric keys", "## Results against the paper", "## Changelog")


def assert_plugin_readme(path: Path, name: str, diagnostic_keys: tuple[str, ...], settings: dict) -> None:
    """A plugin's README (plugins/<name>/README.md): the fixed sections in order plus the fidelity
    table, exactly the metric keys the reward logs (and the engine's no_signal), every `method.*` key."""
    text = Path(path).read_text()
    positions = [text.find(s) for s in SECTIONS]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), positions
    assert "## Fidelity" in text and "| setting | original (source) | ours | |" in text
    assert set(re.findall(rf"`rewards/{name}/([a-z0-9_]+)`", text)) - {"no_signal"} == set(diagnostic_keys)
    assert [k for k in settings if f"`{k}`" not in text] == []


def assert_listed(name: str, distribution: str) -> None:
    """`harness methods` lists the plugin method `name` as GRPO from its distribution."""
    from tests.helpers import harness

    listed = harness("methods")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.split()[:1] == [name])
    assert "grpo" in line and f"plugin {distribution}" in line


def readme(name: str) -> str:
    return Path(import_module(f"factrl.methods.{name}").__file__).with_name("README.md").read_text()


def documented_keys(name: str) -> set[str]:
    return set(re.findall(rf"`rewards/{name}/([a-z0-9_]+)`", readme(name)))


def assert_fixed_sections(name: str) -> None:
    text = readme(name)
    positions = [text.find(s) for s in SECTIONS]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), positions


def assert_config_documented(name: str, nested: tuple[str, ...] = ()) -> None:
    """Every top-level key of configs/method/<name>.yaml appears as `key`, and every key of a
    nested block listed in `nested` as `block.key`."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(str(resources.files("factrl.configs").joinpath("method", f"{name}.yaml")))
    text = readme(name)
    for key in cfg:
        if key != "name" and key not in nested:
            assert f"`{key}`" in text, key
    for block in nested:
        for key in cfg[block]:
            assert f"`{block}.{key}`" in text, f"{block}.{key}"
