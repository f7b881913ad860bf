"""Method registry: in-tree discovery, plugin entry points, and clear failures."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from factrl.harness.core.errors import HarnessError
from factrl.harness.core.method import Method
from factrl.harness.core.registry import all_methods, get_method
from tests.helpers import harness

PLUGIN_PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "harness-plugin-{name}"
version = "0.0.1"

[project.entry-points."harness.methods"]
{name} = "{module}:{cls}"
"""

LENGTH_METHOD = '''
from factrl.harness.core.method import Method, RewardOutput


class ShortAnswer(Method):
    """Rewards every token of completions that close an answer block (a toy third-party method)."""

    name = "shortanswer"
    algorithm = "grpo"
    description = "toy plugin: +1 per token when the completion closes an answer block"
    config_defaults = {"bonus": 1.0}

    def build_reward(self, ctx):
        bonus = float(self.config.bonus)

        def reward(*, prompts, completions, completion_ids, rows, **kwargs):
            returns = [[bonus if "</answer>" in text else 0.0] * len(ids)
                       for text, ids in zip(completions, completion_ids)]
            return RewardOutput(returns, {"closed_rate": sum(bool(r and r[0]) for r in returns) / len(returns)})

        return reward
'''


def install_plugin(tmp_path: Path, name: str, module: str, cls: str, source: str) -> Path:
    """Build a throwaway plugin package and pip-install it into tmp_path/site."""
    project = tmp_path / f"plugin-{name}"
    project.mkdir()
    (project / "pyproject.toml").write_text(PLUGIN_PYPROJECT.format(name=name, module=module, cls=cls))
    (project / f"{module}.py").write_text(textwrap.dedent(source))
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(site), str(project)], check=True, capture_output=True, text=True)
    return site


def test_in_tree_methods_are_discovered():
    methods = all_methods()
    assert "raw" in methods and methods["raw"].origin == "in-tree"
    assert get_method("raw").algorithm == "none"


def test_unknown_method_lists_available():
    with pytest.raises(HarnessError, match=r"unknown method 'rwa'. Did you mean 'raw'\? Available: .*raw"):
        get_method("rwa")


def test_method_validation_rejects_bad_declarations():
    class Bad(Method):
        name = "bad"
        algorithm = "sgd"
        description = "x"

    with pytest.raises(TypeError, match="algorithm"):
        Bad.validate()


def test_harness_methods_lists_raw():
    result = harness("methods")
    assert result.returncode == 0, result.stderr
    assert any(line.startswith("raw") and "none" in line for line in result.stdout.splitlines())


def test_plugin_is_listed_and_runs_through_harness_run(tmp_path):
    site = install_plugin(tmp_path, "shortanswer", "shortanswer_plugin", "ShortAnswer", LENGTH_METHOD)
    env = {"PYTHONPATH": str(site)}
    listed = harness("methods", env=env)
    assert listed.returncode == 0, listed.stderr
    line = next(line for line in listed.stdout.splitlines() if line.startswith("shortanswer"))
    assert "grpo" in line and "plugin harness-plugin-shortanswer" in line

    out = tmp_path / "runs"
    result = harness("run", "method=shortanswer", "model=tiny-llama", f"output_dir={out}",
                     f"leaderboard.store={tmp_path / 'lb.sqlite'}", "method.bonus=2.0", env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    run_dir = next(out.glob("*-shortanswer-tiny-llama-*"))
    assert (run_dir / "train" / "adapter" / "adapter_config.json").is_file()
    assert (run_dir / "metrics.json").is_file()
    assert "bonus: 2.0" in (run_dir / "config.yaml").read_text()
    logged = (run_dir / "train" / "log.jsonl").read_text()
    assert "rewards/shortanswer/closed_rate" in logged


def test_broken_plugin_is_reported_not_fatal(tmp_path):
    site = install_plugin(tmp_path, "broken", "broken_plugin", "Nope", "import does_not_exist_anywhere\n")
    env = {"PYTHONPATH": str(site)}
    listed = harness("methods", env=env)
    assert "raw" in listed.stdout  # the others still list
    assert "broken" in listed.stdout and "FAILED TO LOAD" in listed.stdout and "does_not_exist_anywhere" in listed.stdout
    result = harness("run", "method=broken", "model=tiny-llama", f"output_dir={tmp_path / 'runs'}", env=env)
    assert result.returncode != 0
    assert "method 'broken'" in result.stderr and "failed to load" in result.stderr
    assert "Traceback" not in result.stderr
