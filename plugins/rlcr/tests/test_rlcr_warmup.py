"""RLCR's format warm-up (warmup.py; the harness runs it, harness/training/format_warmup.py): its
targets are the policy's own answer in the full tabc format with a confidence drawn at random, never
the gold; every target is well formed under the reward's own rule; bad settings stop the run with
one line before the model loads; on the embedded SmolLM2-135M it lowers the loss of the format."""
from __future__ import annotations

import inspect
import json
import random
from pathlib import Path

import pytest

pytest.importorskip("factrl_rlcr", reason="factrl-rlcr is not installed: run `pip install -e plugins/rlcr` "
                                          "(make setup does)")
from factrl_rlcr import RLCRMethod  # noqa: E402
from factrl_rlcr.reward import RLCRReward, RLCRSettings  # noqa: E402
from factrl_rlcr.warmup import ANALYSIS, THINK, grid, target  # noqa: E402
from tests.helpers import harness  # noqa: E402

ROW = {"id": "r1", "question": "Who wrote Hamlet?", "answers": ["William Shakespeare"]}
TURNS = [
    "<think>Hamlet is a play.</think><answer>Christopher Marlowe</answer>",  # wrong, with its own think
    "<think>Hamlet is a tragedy by William Shakespeare.</think><answer>William Shakespeare</answer>",
    "<think>" + "long " * 60 + "</think><answer>Ben Jonson</answer>",  # a think too long: the fixed one
    "<think>no close tag <answer>Thomas Kyd</answer> and more",
]


def _hook(**settings):
    return RLCRMethod(settings).format_warmup().target


def test_the_target_is_the_policys_own_answer_and_the_hook_is_given_no_gold():
    hook = _hook()
    assert list(inspect.signature(hook).parameters) == ["turn", "question", "rng"]  # no row, no gold
    targets = [hook(turn, question=ROW["question"], rng=random.Random(0)) for turn in TURNS]
    assert targets[0].startswith("<think>Hamlet is a play.</think><answer>Christopher Marlowe</answer> ")
    assert targets[2].startswith(f"<think>{THINK}</think><answer>Ben Jonson</answer>")
    assert f"<answer>Thomas Kyd</answer> <analysis>{ANALYSIS}</analysis>" in targets[3]
    assert "Shakespeare" not in targets[0] and "Shakespeare" not in targets[3]
    assert hook("<think>I am not sure.</think>", question="q", rng=random.Random(0)) is None  # no answer: no target


def test_the_confidence_is_drawn_from_the_spread_whatever_the_answer():
    hook = _hook()
    right = [float(t.split("<confidence>")[1].split("<")[0])
             for t in (hook(TURNS[1], question="q", rng=r) for r in [random.Random(7)] * 300)]
    wrong = [float(t.split("<confidence>")[1].split("<")[0])
             for t in (hook(TURNS[0], question="q", rng=r) for r in [random.Random(7)] * 300)]
    assert right == wrong  # the same draws for a right and a wrong answer: no correctness information
    assert sorted(set(right)) == grid(0.1, 0.9) == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    narrow = _hook(format_warmup={"confidence": [0.3, 0.5]})
    assert {hook_value for hook_value in (float(narrow(TURNS[0], question="q", rng=random.Random(i))
                                                .split("<confidence>")[1].split("<")[0]) for i in range(100))} \
        == {0.3, 0.4, 0.5}


@pytest.mark.parametrize("pattern", ["tabc", "tac"])
def test_every_target_is_well_formed_for_the_reward(pattern):
    hook = _hook(format_pattern=pattern)
    reward = RLCRReward(settings=RLCRSettings.from_mapping({"format_pattern": pattern}), prefix="<think>")
    for seed, turn in enumerate(TURNS):
        made = hook(turn, question=ROW["question"], rng=random.Random(seed))
        record = reward.score(0, made[len("<think>"):], ROW)
        assert record["no_signal"] is None and record["format"] is True, (made, record)
        assert record["total"] >= 0.5  # a well-formed completion's least (a wrong answer stated certain)
    assert reward.score(0, hook(TURNS[1], question="q", rng=random.Random(0))[len("<think>"):], ROW)["correct"]


@pytest.mark.parametrize("override, key", [
    ("method.format_warmup.confidence=[0.9,0.1]", "method.format_warmup.confidence"),
    ("method.format_warmup.steps=-1", "method.format_warmup.steps"),
    ("method.format_warmup.learning_rate=0", "method.format_warmup.learning_rate"),
    ("method.format_warmup.stepz=2", "method.format_warmup.stepz"),
    ("model.format_warmup=maybe", "model.format_warmup"),
])
def test_bad_warmup_settings_stop_the_run_with_one_line_before_the_model_loads(tmp_path: Path, override, key):
    result = harness("run", "method=rlcr", override, f"output_dir={tmp_path / 'runs'}",
                     f"leaderboard.store={tmp_path / 'lb.sqlite'}")
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert key in lines[-1] and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "Loading weights" not in result.stderr and not list((tmp_path / "runs").glob("*/train"))


def test_the_settings_component_records_the_warmup_settings():
    method = RLCRMethod(None)
    settings = method.components(RLCRReward(settings=method.settings))["settings"]
    assert settings["format_warmup"] == {"steps": 8, "examples": 16, "batch_size": 4, "learning_rate": 5e-4,
                                         "confidence": [0.1, 0.9]}


@pytest.mark.slow  # the embedded SmolLM2-135M: 4 greedy completions and 4 steps (about 60 s on 2 shared cores)
def test_on_the_embedded_model_the_warmup_lowers_the_format_loss(tmp_path: Path):
    from peft import get_peft_model

    from factrl.harness.core.prompts import response_prefix
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.services import models
    from factrl.harness.training import format_warmup
    from factrl.harness.training.args import lora_config
    from factrl.harness.training.engine import method_system

    cfg = compose(["method=rlcr", "method.format_warmup.examples=4", "method.format_warmup.steps=4",
                   "method.format_warmup.batch_size=2"])
    method = RLCRMethod(cfg.method)
    plan = format_warmup.planned(method, cfg.model)
    assert plan is not None  # the embedded default asks for it
    identity = models.resolve(cfg.model)
    tokenizer = models.load_tokenizer(identity, cfg.model)
    model = get_peft_model(models.load_model(identity, cfg.model), lora_config(cfg.lora))
    rows = load_pool(cfg.pool, cfg.eval)
    entry = format_warmup.run_or_load(plan, model, tokenizer, rows, model_cfg=cfg.model, system=method_system(method),
                                      seed=0, max_completion_length=64, out=tmp_path)
    assert entry["stand_in"] is True and entry["label"] == "SFT format warm-up (SFT+RLCR)"
    assert entry["examples"] == 4 and entry["loss_after"] < 0.8 * entry["loss_before"], entry
    targets = json.loads((tmp_path / format_warmup.FILENAME).read_text())["targets"]
    reward = RLCRReward(settings=method.settings, prefix=response_prefix(cfg.model))
    assert len(targets) == 4
    for made in targets:
        record = reward.score(0, made[len("<think>"):], ROW)
        assert record["format"] is True and record["no_signal"] is None
