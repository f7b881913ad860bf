"""Optimizer and LR schedule (harness/training/optim.py): each method's LR curve is its
original's (vectors from the upstream schedulers, tests/reference_vectors/lr_schedules), the
trainer's optimizer gets the betas and weight decay, the 8-bit fallback is one log line and a
stand-in, and bad settings are one-line errors."""
from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pytest
import torch
from transformers import Trainer

from factrl.harness.engine.config import compose
from factrl.harness.core.errors import ConfigError
from factrl.harness.training.args import grpo_args
from factrl.harness.training.optim import EIGHT_BIT_ADAMW, announce_fallback, choose_optimizer, optimizer_component
from tests.helpers import REPO

VECTORS = REPO / "tests" / "reference_vectors" / "lr_schedules"
CASES = [  # (vector file, the cell whose composed config must reproduce it)
    ("corver_grpo", ["method=corver", "model=llama-3.2-3b"]),
    ("knowrl_grpo", ["method=knowrl", "model=qwen3-8b"]),
    ("fspo_qwen", ["method=fspo", "model=qwen3-4b"]),
    ("fspo_llama", ["method=fspo", "model=llama-3.1-8b"]),
    ("rlfh_ppo", ["method=rlfh", "model=qwen3-8b"]),
    ("protocol_ppo", ["method=forag", "model=llama-3.1-8b"]),  # FoRAG: the shared protocol (no original)
    ("nover_grpo", ["method=nover", "model=llama-3.2-3b"]),
]


def _args(overrides, tmp_path):
    cfg = compose(overrides)
    if cfg.method.name in ("rlfh", "forag"):
        from factrl.harness.training.ppo import PPOSettings
        from factrl.harness.training.args import ppo_args

        return ppo_args(cfg, tmp_path, PPOSettings.from_config(cfg.train))
    return grpo_args(cfg, tmp_path)


def _harness_lrs(args) -> list[float]:
    """LR per optimizer step of the scheduler transformers' Trainer builds from these args."""
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.AdamW([param], lr=args.learning_rate)
    holder = SimpleNamespace(args=args, lr_scheduler=None, optimizer=optimizer)
    scheduler = Trainer.create_scheduler(holder, num_training_steps=args.max_steps, optimizer=optimizer)
    lrs = []
    for _ in range(args.max_steps):
        lrs.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    return lrs


@pytest.mark.parametrize("name, overrides", CASES, ids=[c[0] for c in CASES])
def test_lr_schedule_matches_the_originals_scheduler(name, overrides, tmp_path):
    reference = json.loads((VECTORS / f"{name}.json").read_text())
    args = _args(overrides, tmp_path)
    assert (args.max_steps, args.learning_rate) == (reference["steps"], reference["learning_rate"])
    assert _harness_lrs(args) == pytest.approx(reference["lr"], rel=1e-9, abs=1e-16), reference["code"]


def test_trainer_optimizer_gets_betas_and_weight_decay(tmp_path):
    from factrl.harness.services import models
    from factrl.harness.pool import load_pool
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.args import lora_config
    from factrl.harness.training.grpo import TokenGRPOTrainer
    from tests.core.toy_training import Toy

    cfg = compose(["model=tiny-llama", "train.optim=adamw_torch", "train.adam_betas=[0.9,0.95]",
                   "train.weight_decay=0.01"])
    identity = models.resolve(cfg.model)
    trainer = TokenGRPOTrainer(model=models.load_model(identity, cfg.model), args=grpo_args(cfg, tmp_path),
                               train_dataset=build_dataset(load_pool(cfg.pool)[:2], cfg.model),
                               processing_class=models.load_tokenizer(identity, cfg.model),
                               peft_config=lora_config(cfg.lora), method_reward=Toy(cfg.method).build_reward(None),
                               reward_name="toy")
    optimizer = trainer.create_optimizer()
    assert type(optimizer) is torch.optim.AdamW
    trained = [g for g in optimizer.param_groups if g["params"]]
    assert trained and all(g["betas"] == (0.9, 0.95) for g in trained)
    assert max(g["weight_decay"] for g in trained) == 0.01  # LoRA matrices decay (no bias or norm params)


def test_eight_bit_adamw_falls_back_to_torch_adamw_with_one_line_and_a_stand_in(tmp_path, caplog):
    cfg = compose(["model=tiny-llama"])  # the shared protocol: CorVer's adamw_8bit
    assert cfg.train.optim == "adamw_8bit"
    choice = choose_optimizer("adamw_8bit")
    if not choice.stand_in:
        pytest.skip("CUDA and bitsandbytes are here: the 8-bit optimizer runs (the GPU check covers it)")
    assert choice.used == "adamw_torch" and choice.reason
    assert grpo_args(cfg, tmp_path).optim == "adamw_torch"
    with caplog.at_level(logging.WARNING, logger="factrl.harness.training.optim"):
        announce_fallback(cfg.train)
    lines = [r for r in caplog.records if r.name == "factrl.harness.training.optim"]
    assert len(lines) == 1 and "torch AdamW" in lines[0].getMessage()
    entry = optimizer_component(cfg.train)
    assert entry["stand_in"] is True and entry["optim"] == "adamw_8bit" and entry["optim_used"] == "adamw_torch"
    assert "in place of adamw_8bit" in entry["note"]
    # An optimizer that runs anywhere is no stand-in and logs nothing.
    caplog.clear()
    torch_cfg = compose(["model=tiny-llama", "train.optim=adamw_torch"]).train
    announce_fallback(torch_cfg)
    assert not caplog.records and optimizer_component(torch_cfg)["stand_in"] is False


@pytest.mark.parametrize("override, message", [
    ("train.lr_scheduler=cosinus", "train.lr_scheduler='cosinus' is not a transformers scheduler"),
    ("train.lr_scheduler=cosine_with_min_lr", "needs train.lr_scheduler_kwargs.min_lr_rate"),
    ("train.optim=adam9", "train.optim='adam9' is not a transformers optimizer"),
    ("train.adam_betas=[0.9]", "train.adam_betas"),
    ("train.adam_betas=[0.9,1.5]", "both must be in [0, 1)"),
    ("train.warmup_ratio=1.5", "train.warmup_ratio=1.5"),
    ("train.loss_type=nope", "train.loss_type='nope'"),
])
def test_bad_optimizer_settings_are_one_line_errors(override, message, tmp_path):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        grpo_args(compose(["model=tiny-llama", override]), tmp_path)


# -- bitsandbytes: the `gpu` extra brings it, so a GPU run made by the README trains 8-bit ----------------

def _gpu_extra() -> list[str]:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["gpu"]


def test_the_gpu_extra_pins_bitsandbytes_and_the_readme_installs_it():
    import re

    pins = [req for req in _gpu_extra() if re.match(r"bitsandbytes\b", req)]
    assert len(pins) == 1 and re.fullmatch(r"bitsandbytes==\d+\.\d+\.\d+", pins[0].split(";")[0].strip()), pins
    readme = (REPO / "README.md").read_text()
    assert re.search(r'pip install -e "\.\[gpu[,\]]', readme), "the README's GPU install line must use the gpu extra"
    # every method whose protocol trains with 8-bit AdamW is covered by that extra
    eight_bit = {m for m in ("corver", "knowrl", "forag", "fspo", "rlfh", "nover")
                 if compose([f"method={m}", "model=qwen3-4b"]).train.optim in EIGHT_BIT_ADAMW}
    assert eight_bit == {"corver", "knowrl", "forag"}


@pytest.fixture
def fake_bitsandbytes(tmp_path, monkeypatch):
    """An importable `bitsandbytes` distribution of the pinned version (its spec and metadata; the
    8-bit kernels themselves need CUDA, which this machine lacks)."""
    version = next(r for r in _gpu_extra() if r.startswith("bitsandbytes")).split("==")[1].split(";")[0].strip()
    (tmp_path / "bitsandbytes").mkdir()
    (tmp_path / "bitsandbytes" / "__init__.py").write_text("")
    info = tmp_path / f"bitsandbytes-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: bitsandbytes\nVersion: {version}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return version


@pytest.mark.parametrize("cuda, installed, stand_in, reason", [
    (False, False, True, "no CUDA device"),
    (False, True, True, "no CUDA device"),
    (True, False, True, 'pip install -e ".[gpu]"'),
    (True, True, False, None),
])
def test_eight_bit_adamw_runs_where_cuda_and_the_extra_are(monkeypatch, request, cuda, installed, stand_in, reason):
    import importlib.util

    if installed:
        version = request.getfixturevalue("fake_bitsandbytes")
    elif importlib.util.find_spec("bitsandbytes") is not None:
        pytest.skip("bitsandbytes is installed here")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    choice = choose_optimizer("adamw_8bit")
    assert choice.stand_in is stand_in
    assert (reason is None and choice.reason is None) or reason in choice.reason
    entry = optimizer_component(compose(["method=knowrl", "model=qwen3-4b"]).train)
    assert entry["stand_in"] is stand_in
    if not stand_in:
        assert (entry["optim_used"], entry["backend"], entry["revision"]) == ("adamw_8bit", "bitsandbytes", version)
