"""docs/ADDING_A_METHOD.md works for a newcomer: its worked sentence-level method (the guide's code
blocks are tests/guide_example/ verbatim) scores a written completion as the guide says, and,
installed as any plugin is, `harness methods` lists it and `harness run` trains it for one step
on tiny-llama, recording its default settings entry."""
from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys

import pytest

from factrl.harness.core.method import RunContext
from tests.helpers import REPO, harness

GUIDE = REPO / "docs" / "ADDING_A_METHOD.md"
EXAMPLE = REPO / "tests" / "guide_example"
FILES = ("pyproject.toml", "goldsent/__init__.py")


def test_the_guide_shows_the_example_files_verbatim():
    shown = dict(re.findall(r"`tests/guide_example/([^`]+)`:\n\n```(?:toml|python)\n(.*?)```", GUIDE.read_text(),
                            flags=re.S))
    assert set(shown) == set(FILES)
    for name in FILES:
        assert shown[name] == (EXAMPLE / name).read_text(), f"the guide's {name} differs from tests/guide_example/{name}"


@pytest.fixture(scope="module")
def goldsent():
    spec = importlib.util.spec_from_file_location("goldsent_guide_example", EXAMPLE / "goldsent" / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve string annotations through sys.modules
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


@pytest.fixture(scope="module")
def tokenizer():
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose

    cfg = compose(["model=tiny-llama"]).model
    return models.load_tokenizer(models.resolve(cfg), cfg)


def _score(goldsent, tokenizer, config, text, answers):
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    reward = goldsent.GoldSentence(config).build_reward(RunContext(config=None, tokenizer=tokenizer))
    return ids, reward(prompts=["q"], completions=[text], completion_ids=[ids],
                       rows=[{"question": "q", "answers": answers}])


def test_each_sentence_that_states_the_gold_earns_the_weight(goldsent, tokenizer):
    from factrl.harness.core.rewards import response_rewards

    text = "<think>Paris is the capital of France. It is very old.</think>\n<answer>Paris</answer>"
    ids, out = _score(goldsent, tokenizer, None, text, ["Paris"])
    base = response_rewards(completions=[text], rows=[{"answers": ["Paris"]}], completion_ids=[ids]).total[0]
    returns = out.token_returns[0]
    assert len(returns) == len(ids)
    raised = [t for t, r in enumerate(returns) if r == pytest.approx(base + 0.5)]
    rest = [t for t, r in enumerate(returns) if r == pytest.approx(base)]
    assert len(raised) + len(rest) == len(ids) and raised and rest
    # The raised tokens spell the two gold sentences; the other sentence and the tags earn the base.
    spelled = tokenizer.decode([ids[t] for t in raised])
    assert "Paris is the capital of France." in spelled and "old" not in spelled and "think" not in spelled
    assert [(r["text"], r["score"]) for r in out.records] == [
        ("Paris is the capital of France.", 1.0), ("It is very old.", 0.0), ("Paris", 1.0)]
    assert out.diagnostics["gold_sentences_mean"] == 2.0 and out.diagnostics["aligned_rate"] == 1.0
    # weight 0: plain response-level returns; a completion without a gold sentence: the base everywhere.
    assert set(_score(goldsent, tokenizer, {"weight": 0}, text, ["Paris"])[1].token_returns[0]) == {base}
    _, other = _score(goldsent, tokenizer, None, text, ["Lyon"])
    assert len(set(other.token_returns[0])) == 1 and other.diagnostics["gold_sentences_mean"] == 0.0


def test_a_bad_setting_is_one_line(goldsent):
    from factrl.harness.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^method=goldsent: method\.splitter='nltk': choose one of reference, "):
        goldsent.GoldSentence({"splitter": "nltk"})


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """tests/guide_example copied out of the checkout and pip-installed into a folder, as the guide says."""
    root = tmp_path_factory.mktemp("guide-example")
    shutil.copytree(EXAMPLE, root / "project", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    site = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(site), str(root / "project")], check=True, capture_output=True, text=True,
                   timeout=300)
    return root, {"PYTHONPATH": str(site)}


@pytest.mark.slow  # one real training step on tiny-llama plus the install (about 30 s on 2 shared cores)
def test_harness_lists_it_and_trains_it_for_one_step(installed):
    root, env = installed
    listed = harness("methods", env=env)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert re.search(r"^goldsent +grpo +plugin goldsent +toy: response reward", listed.stdout, flags=re.M)
    out = root / "runs"
    done = harness("run", "method=goldsent", "model=tiny-llama", "train.steps=1", "eval.limit=1",
                   f"output_dir={out}", f"leaderboard.store={root / 'lb.sqlite'}", env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    run = next(out.glob("*-goldsent-tiny-llama-*"))
    log = [json.loads(line) for line in (run / "train" / "log.jsonl").read_text().splitlines()]
    keys = set().union(*log)
    assert {"rewards/goldsent/gold_sentences_mean", "rewards/goldsent/aligned_rate",
            "rewards/goldsent/correct_rate"} <= keys
    assert max(entry["step"] for entry in log) == 1
    settings = json.loads((run / "train" / "components.json").read_text())["components"]["settings"]
    assert settings == {"kind": "settings", "backend": None, "model": None, "revision": None, "stand_in": False,
                        "label": "GoldSentence settings", "weight": 0.5, "alignment_threshold": 0.5,
                        "splitter": "reference"}
    assert json.loads((run / "run.json").read_text())["status"] == "finished"
