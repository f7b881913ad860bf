"""Checks every method README gets (docs/ADDING_A_METHOD.md, "README sections the tests check"): the fixed sections in
order, the fidelity table, a dated changelog, the documented `rewards/<name>/<key>` metric keys, and a line for
every key of the method's config. tests/core/test_method_folders.py runs `readme_problems` on every method."""
from __future__ import annotations

import re
from importlib import import_module, resources
from pathlib import Path

SECTIONS = ("## Paper and citation", "## What changes relative to GRPO", "## Hyperparameters",
            "## Logged metric keys", "## Results against the paper", "## Changelog")
FIDELITY_HEADER = "| setting | original (source) | ours | |"
DATE = re.compile(r"\b20\d\d-[01]\d\b")  # 2026-12 or 2026-12-04


def readme_problems(text: str) -> list[str]:
    """What a method README lacks: the fixed SECTIONS in this order, a `## Fidelity` section with
    the table (FIDELITY_HEADER), and a changelog with at least one dated entry; [] when complete."""
    problems = [f"no `{s}` section" for s in SECTIONS if s not in text]
    positions = [text.find(s) for s in SECTIONS]
    if not problems and positions != sorted(positions):
        problems.append(f"sections out of order (want {', '.join(s[3:] for s in SECTIONS)})")
    if "## Fidelity" not in text or FIDELITY_HEADER not in text:
        problems.append(f"no `## Fidelity` section with the table `{FIDELITY_HEADER}`")
    changelog = text[text.find("## Changelog"):] if "## Changelog" in text else ""
    changelog = changelog[:changelog.find("\n## ", 3)] if "\n## " in changelog[3:] else changelog
    if changelog and not DATE.search(changelog):
        problems.append("no dated entry under `## Changelog` (YYYY-MM or YYYY-MM-DD)")
    return problems


def assert_plugin_readme(path: Path, name: str, diagnostic_keys: tuple[str, ...], settings: dict) -> None:
    """A plugin's README (plugins/<name>/README.md): the structure `readme_problems` checks, exactly the
    metric keys the reward logs (and the engine's no_signal), every `method.*` key."""
    text = Path(path).read_text()
    assert readme_problems(text) == [], path
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
