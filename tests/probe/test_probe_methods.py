"""`harness probe method=<unknown>` names the same methods as `harness methods`, plugins
included: a throwaway plugin distribution (an entry point in group harness.methods) on the path."""
from __future__ import annotations

import os
import re

from tests.helpers import harness


def test_an_unknown_method_lists_every_registered_one_plugins_included(tmp_path):
    (tmp_path / "goldbonus_plugin.py").write_text(
        "from factrl.harness.core.method import Method\n\n"
        "class GoldBonus(Method):\n    name = 'goldbonus'\n    algorithm = 'grpo'\n"
        "    description = 'test plugin'\n\n    def build_reward(self, ctx):\n        return None\n\n"
        "METHOD = GoldBonus\n")
    info = tmp_path / "goldbonus-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: goldbonus\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[harness.methods]\ngoldbonus = goldbonus_plugin:METHOD\n")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    listed = harness("methods", env=env)
    assert listed.returncode == 0, listed.stderr
    names = sorted(line.split()[0] for line in listed.stdout.splitlines()[1:] if line.strip())
    assert "goldbonus" in names and "nover" in names
    for command in ("probe", "run"):
        refused = harness(command, "method=nonesuch", env=env)
        assert refused.returncode == 2
        valid = re.search(r"Valid: (.*)\.$", refused.stderr.strip()).group(1).split(", ")
        assert sorted(valid) == names, command
