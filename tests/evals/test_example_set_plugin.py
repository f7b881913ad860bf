"""The worked example of docs/ADDING_AN_EVAL_SET.md: a third-party package (tests/plugins/example_set/)
adds an evaluation set with a task type and scoring rule of its own through entry points. Installed
with pip, it is listed (`harness sets`), evaluated (`harness eval` on the tiny model) and published
(the accuracy table shows its column, by its label)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from factrl.harness.core import registry
from factrl.leaderboard.cli import main as leaderboard
from tests.helpers import harness

EXAMPLE = Path(__file__).resolve().parents[1] / "plugins" / "example_set"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The example package pip-installed into a folder of its own (as tests/core/test_registry.py installs
    method plugins): a real dist-info with the package's entry points."""
    target = tmp_path_factory.mktemp("example-set-site")
    source = tmp_path_factory.mktemp("example-set-build") / "example_set"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(source)], check=True, capture_output=True, text=True)
    assert (target / "factrl_example_set" / "questions.jsonl").is_file()
    return target


def test_the_example_set_is_listed_evaluated_and_published(site, tmp_path, monkeypatch, capsys):
    env = {"PYTHONPATH": str(site)}
    listed = harness("sets", env=env)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    line = next(line for line in listed.stdout.splitlines() if line.startswith("capitals_yesno"))
    assert line.split()[1:] == ["Capitals", "(yes/no)", "yes_no", "accuracy", "-", "plugin", "factrl-example-set"]
    assert "yes_no (accuracy: accuracy, na_rate; plugin factrl-example-set)" in listed.stdout

    out = tmp_path / "runs"
    result = harness("eval", "model=tiny-llama", "eval=base", "eval.sets=[capitals_yesno,demo]", "eval.limit=3",
                     "eval.max_new_tokens=8", "eval.cache=false", f"output_dir={out}", env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    run = next(out.glob("*"))
    metrics = json.loads((run / "metrics.json").read_text())
    mine = metrics["sets"]["capitals_yesno"]
    assert mine["set"]["task"] == "yes_no" and mine["set"]["source"] == "embedded:factrl-example-set"
    assert mine["set"]["task_rule"] == {"target": "factrl_example_set.rule:RULE", "version": "1"}
    assert "task_rule" not in metrics["sets"]["demo"]["set"]
    assert mine["metrics"]["accuracy"]["n"] == 3 and set(mine["metrics"]) == {"accuracy", "na_rate"}
    samples = [json.loads(s) for s in (run / "eval" / "capitals_yesno" / "samples.jsonl").read_text().splitlines()]
    assert [s["id"] for s in samples] == ["cap-1", "cap-2", "cap-3"]
    # The rule's verdicts, recomputed from the samples: the first answer word against the reference.
    for sample in samples:
        words = sample["answer"].strip().lower().split()
        first = words[0].strip(".,!") if words else ""
        assert sample["correct"] == (first == sample["references"][0])
    assert metrics["macro"] == {}  # neither set is one of the Macro's

    # Published through the real leaderboard code, with the plugin importable in this process.
    monkeypatch.syspath_prepend(str(site))
    registry.refresh()
    try:
        store = tmp_path / "lb.sqlite"
        assert leaderboard(["add", str(run), "--store", str(store)]) == 0
        assert leaderboard(["publish", "--store", str(store), "--out", str(tmp_path / "site")]) == 0
        capsys.readouterr()
        markdown = (tmp_path / "site" / "leaderboard.md").read_text(encoding="utf-8")
        header = next(line for line in markdown.splitlines() if "Capitals (yes/no)" in line)
        assert header.index("Capitals (yes/no)") < header.index("Demo")  # order 80 < the demo set's 100
        assert "capitals_yesno" not in header
        page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
        assert "Capitals (yes/no)" in page[page.index('id="t-accuracy"'):]
    finally:
        registry.refresh()
