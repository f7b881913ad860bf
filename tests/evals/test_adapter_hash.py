"""The adapter hash is a content hash: two trainings that wrote the same weights into different
run directories hash the same (transformers' training_args.bin embeds the output path, PEFT
lists target_modules in set order); any change to a weight or a computing setting changes it."""
from __future__ import annotations

import json
import shutil

from factrl.evals.provenance import adapter_info
from tests.core.toy_training import train_toy

ONE_STEP = ["train.steps=1", "train.save_steps=1", "train.completions_per_question=2", "train.max_completion_length=8"]


def test_identical_trainings_in_two_directories_hash_the_same(tmp_path):
    a = train_toy(tmp_path / "first", ONE_STEP)
    b = train_toy(tmp_path / "elsewhere" / "second", ONE_STEP)
    assert (a / "adapter_model.safetensors").read_bytes() == (b / "adapter_model.safetensors").read_bytes()
    assert (a / "training_args.bin").read_bytes() != (b / "training_args.bin").read_bytes()  # the output path
    assert adapter_info(a)["sha256"] == adapter_info(b)["sha256"]

    moved = tmp_path / "moved"
    shutil.copytree(b, moved)
    config = json.loads((moved / "adapter_config.json").read_text())
    config["target_modules"] = list(reversed(config["target_modules"]))  # another set order
    config["base_model_name_or_path"] = "/another/machine/tiny-llama"
    (moved / "adapter_config.json").write_text(json.dumps(config))
    (moved / "README.md").write_text("edited")
    assert adapter_info(moved)["sha256"] == adapter_info(a)["sha256"]

    (moved / "adapter_config.json").write_text(json.dumps({**config, "lora_alpha": config["lora_alpha"] * 2}))
    assert adapter_info(moved)["sha256"] != adapter_info(a)["sha256"]
    (moved / "adapter_config.json").write_text(json.dumps(config))
    weights = bytearray((moved / "adapter_model.safetensors").read_bytes())
    weights[-1] ^= 1  # the last byte of the last tensor
    (moved / "adapter_model.safetensors").write_bytes(bytes(weights))
    assert adapter_info(moved)["sha256"] != adapter_info(a)["sha256"]
