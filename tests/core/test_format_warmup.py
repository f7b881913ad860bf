"""The format warm-up (Method.format_warmup, interface 7; harness/training/format_warmup.py): where
the model asks for it, a few supervised steps on the policy's own greedy completions in the
method's format lower the loss of that format, before the first RL step; it is recorded as a
stand-in with its losses; it is off for every model config but the embedded SmolLM2-135M; a kill
after it resumes to the uninterrupted run's adapter, and a rerun from scratch repeats it exactly."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from factrl.harness.core.method import INTERFACE_VERSION
from factrl.harness.engine.config import compose
from factrl.harness.services.models.settings import ModelSettings
from factrl.harness.training import format_warmup
from tests.core.toy_warmup_training import ToyWarmup, train_toy_warmup
from tests.kills import run_until

OVERRIDES = ["train.steps=2", "train.save_steps=1", "train.completions_per_question=2", "train.max_completion_length=12",
             "+model.format_warmup=true"]


def test_the_interface_version_names_the_hook():
    assert INTERFACE_VERSION == 7


def test_only_the_embedded_default_model_asks_for_it():
    from factrl.harness.engine.config import group_options

    asking = [name for name in group_options("model") if name != "custom"
              and ModelSettings.of(compose([f"model={name}"]).model).format_warmup]
    assert asking == ["smollm2-135m"]
    assert not ModelSettings.of(compose(["model=custom", "model.id=org/name"]).model).format_warmup
    method = ToyWarmup(None)
    assert format_warmup.planned(method, compose(["model=tiny-llama"]).model) is None
    assert format_warmup.planned(method, compose(["model=tiny-llama", "+model.format_warmup=true"]).model) is not None
    assert format_warmup.planned(method, compose(["model=smollm2-135m"]).model) is not None
    from tests.core.toy_training import Toy

    assert format_warmup.planned(Toy(None), compose(["model=smollm2-135m"]).model) is None  # no hook: none


def _adapter(run: Path) -> dict[str, torch.Tensor]:
    return load_file(str(run / "train" / "adapter" / "adapter_model.safetensors"))


@pytest.mark.slow  # two tiny-Llama trainings with a warm-up (about 25 s on 2 shared cores)
def test_the_warmup_lowers_the_format_loss_and_is_recorded_as_a_stand_in(tmp_path):
    train_toy_warmup(tmp_path / "run", OVERRIDES)
    train = tmp_path / "run" / "train"
    entry = json.loads((train / "components.json").read_text())["components"]["format_warmup"]
    assert entry["stand_in"] is True and entry["note"] == "a test's stand-in" and entry["digits"] == [0, 9]
    assert (entry["steps"], entry["examples"], entry["batch_size"], entry["learning_rate"]) == (6, 4, 2, 5e-2)
    assert entry["loss_after"] < entry["loss_before"] - 0.03, entry  # a random 16-wide model: small but sure
    log = [json.loads(line) for line in (train / format_warmup.LOG_FILENAME).read_text().splitlines()]
    assert [line["step"] for line in log] == [1, 2, 3, 4, 5, 6]
    recorded = json.loads((train / format_warmup.FILENAME).read_text())
    targets = recorded["targets"]
    assert len(targets) == 4 and all(t.startswith("[[") and " #" in t for t in targets)
    assert "warmup" in json.loads((tmp_path / "run" / "timings.json").read_text())["phases"]
    # RL's own movement is measured from the warmed-up adapter: the initial snapshot is taken after it.
    delta = json.loads((train / "adapter_delta.json").read_text())
    assert delta["changed"] > 0
    # Off where the model does not ask: no files, no component, the same engine entries otherwise.
    train_toy_warmup(tmp_path / "off", OVERRIDES[:-1])
    off = tmp_path / "off" / "train"
    assert not (off / format_warmup.FILENAME).exists() and not (off / format_warmup.LOG_FILENAME).exists()
    components = json.loads((off / "components.json").read_text())["components"]
    assert "format_warmup" not in components
    assert set(components) | {"format_warmup"} == set(json.loads((train / "components.json").read_text())["components"])


@pytest.mark.slow  # four tiny-Llama processes (about 60 s on 2 shared cores)
def test_a_kill_after_the_warmup_resumes_to_the_uninterrupted_adapter_and_a_rerun_repeats_it(tmp_path):
    train_toy_warmup(tmp_path / "straight", OVERRIDES)
    straight = tmp_path / "straight" / "train"
    # A kill before warmup.json was written: the next attempt warms up from the start. Its result
    # must be the same weights, which a second run from scratch shows (same seed, greedy targets).
    train_toy_warmup(tmp_path / "again", OVERRIDES)
    a = load_file(str(straight / format_warmup.WEIGHTS))
    b = load_file(str(tmp_path / "again" / "train" / format_warmup.WEIGHTS))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # A kill once the warm-up is recorded, before the first checkpoint: the resume loads it.
    run = tmp_path / "killed"
    cmd = [sys.executable, "-m", "tests.core.toy_warmup_training", str(run), *OVERRIDES]
    log = tmp_path / "attempts.log"
    assert run_until(cmd, log, lambda: (run / "train" / format_warmup.FILENAME).exists()) == -9
    assert not (run / "train" / "TRAINING_DONE").exists()
    recorded = (run / "train" / format_warmup.FILENAME).stat().st_mtime_ns
    assert run_until(cmd, log) == 0, log.read_text()[-3000:]
    assert (run / "train" / format_warmup.FILENAME).stat().st_mtime_ns == recorded  # loaded, not trained again
    x, y = _adapter(tmp_path / "straight"), _adapter(run)
    assert x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)
    mine, theirs = (json.loads((folder / "components.json").read_text())["components"] for folder in (run / "train", straight))
    assert mine["format_warmup"].pop("seconds") > 0 and theirs["format_warmup"].pop("seconds") > 0
    assert mine == theirs


def test_greedy_targets_come_through_the_cpu_fast_path_with_the_stock_tokens(monkeypatch):
    """The warm-up's greedy completions merge the adapter and prepack the weights on the CPU (as
    the rollouts do): the same tokens as PEFT's own generate on a trained-looking adapter."""
    from peft import get_peft_model

    from factrl.harness.services import models
    from factrl.harness.services.models import merged_linears as merged_module
    from factrl.harness.training.args import lora_config

    cfg = compose(["model=tiny-llama"])
    identity = models.resolve(cfg.model)
    tokenizer = models.load_tokenizer(identity, cfg.model)
    model = get_peft_model(models.load_model(identity, cfg.model), lora_config(cfg.lora))
    with torch.no_grad():
        generator = torch.Generator().manual_seed(0)
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    prompts = ["Who wrote Hamlet?", "In what country is Basso, a small town on the coast?"]
    entered = []
    real = merged_module.merged_linears
    monkeypatch.setattr(merged_module, "merged_linears", lambda *a, **k: entered.append(k) or real(*a, **k))
    fast = format_warmup.greedy(model, tokenizer, prompts, 12)
    assert entered and entered[0]["prepack"] is True
    tokenizer.padding_side = "left"
    batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    model.eval()
    with torch.no_grad():
        ids = model.generate(**batch, max_new_tokens=12, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    assert fast == tokenizer.batch_decode(ids[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
