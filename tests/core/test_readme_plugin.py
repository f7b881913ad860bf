"""The README's "Adding a method as a plugin" works as written: its pyproject.toml and its
Python file, copied out of the README into a package and installed, give a method that
`harness methods` lists (aligned), that composes with its defaults and protocol settings, whose
label the tables read without importing it, and that `harness run` trains (writing the
harness's own README.md card beside the adapter)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib

import pytest

from tests.helpers import REPO, harness

SECTION = "## Adding a method as a plugin"


def _snippets() -> dict[str, str]:
    text = (REPO / "README.md").read_text()
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", len(SECTION))]
    blocks = dict(re.findall(r"```(toml|python)\n(.*?)```", section, flags=re.S))
    assert set(blocks) == {"toml", "python"}, "the section shows one pyproject.toml and one Python file"
    return blocks


def test_the_pyproject_is_complete():
    project = tomllib.loads(_snippets()["toml"])
    assert project["build-system"]["build-backend"] == "setuptools.build_meta"
    assert any(r.startswith("setuptools") for r in project["build-system"]["requires"])
    meta = project["project"]
    assert meta["name"] and meta["version"] and "factrl-harness" in meta["dependencies"]
    assert project["project"]["entry-points"]["harness.methods"] == {"mymethod": "my_method:MyMethod"}
    assert project["tool"]["setuptools"]["packages"] == ["my_method"]


CHECK = """
import json, sys
from factrl.harness.engine.config import compose
from factrl.harness.core.method import Method, RewardOutput
from factrl.harness.core.registry import display_label, get_method

label = display_label("mymethod")  # read from the source: the plugin is not imported yet
imported_for_label = "my_method" in sys.modules
cls = get_method("mymethod")
cls.validate()
cfg = compose(["method=mymethod", "model=tiny-llama"])
method = cls({"bonus": 2})
out = method.build_reward(None)(prompts=["q", "q"], completions=["It is Paris.", "Rome"],
                                completion_ids=[[1, 2, 3], [4]], rows=[{"answers": ["Paris"]}] * 2)
print(json.dumps({"label": label, "imported_for_label": imported_for_label, "class_label": cls.label,
                  "subclass": issubclass(cls, Method), "bonus": cfg.method.bonus, "loss_type": cfg.train.loss_type,
                  "parsed": method.settings.bonus, "values": out.token_returns, "diagnostics": out.diagnostics,
                  "is_output": isinstance(out, RewardOutput)}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The README's two files as a package, pip-installed (no deps, no build isolation) into a folder."""
    root = tmp_path_factory.mktemp("readme-plugin")
    blocks = _snippets()
    project = root / "project"
    (project / "my_method").mkdir(parents=True)
    (project / "pyproject.toml").write_text(blocks["toml"])
    (project / "my_method" / "__init__.py").write_text(blocks["python"])
    site = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(site), str(project)], check=True, capture_output=True, text=True, timeout=300)
    return root, {"PYTHONPATH": str(site)}


def test_the_method_is_listed_with_aligned_columns(installed):
    _, env = installed
    listed = harness("methods", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = [line for line in listed.stdout.splitlines()[1:] if line.strip()]
    mine = next(line for line in rows if line.startswith("mymethod"))
    assert "plugin my-method" in mine
    # The description starts in the same column on every line, a plugin's wider origin included.
    columns = [re.match(r"(\S+) +(\S+) +(in-tree|plugin \S+) +(\S.*)$", line) for line in rows]
    assert all(columns) and len({m.start(4) for m in columns}) == 1, listed.stdout
    assert mine[columns[rows.index(mine)].start(4):].startswith("toy: every token")


def test_the_method_composes_parses_and_rewards_as_the_readme_says(installed):
    _, env = installed
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["label"] == got["class_label"] == "MyMethod" and not got["imported_for_label"]
    assert got["subclass"] and got["is_output"]
    assert (got["bonus"], got["loss_type"], got["parsed"]) == (1.0, "bnpo", 2.0)  # DEFAULTS, protocol_defaults
    assert got["values"] == [[2.0, 2.0, 2.0], [0.0]] and got["diagnostics"] == {"hit_rate": 0.5}


@pytest.mark.slow
def test_harness_run_trains_it(installed):
    root, env = installed
    out = root / "runs"
    done = harness("run", "method=mymethod", "model=tiny-llama", "train.steps=1", "eval.limit=1",
                   f"output_dir={out}", "leaderboard.enabled=false", env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    run = next(out.glob("*-mymethod-tiny-llama-*"))
    assert "rewards/mymethod/hit_rate" in (run / "train" / "log.jsonl").read_text()
    # train/ and train/adapter/ hold the harness's card, not TRL's "fine-tuned version of [None]".
    info = json.loads((run / "run.json").read_text())
    for folder in (run / "train", run / "train" / "adapter"):
        card = (folder / "README.md").read_text()
        assert card.startswith("# MyMethod: LoRA adapter trained by factrl-harness"), folder
        assert "[None]" not in card and "generated_from_trainer" not in card
        assert "`mymethod` (MyMethod), version 1, algorithm grpo" in card and "steps: 1 (`train.steps`)" in card
        assert f"config hash: `{info['config_hash']}`" in card and f"run directory: `{run.resolve()}`" in card
        assert f"tiny-llama (`embedded:tiny-llama`, sha256 {info['model_identity']['sha256'][:12]})" in card
