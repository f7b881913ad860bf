"""The FSPO README documents exactly the metric keys the reward logs and covers every setting of
configs/method/fspo.yaml (its sections: tests/core/test_method_folders.py)."""
from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from factrl.methods import fspo

README = Path(fspo.__file__).with_name("README.md")
ENGINE_KEYS = {"no_signal"}  # added by the training engine for every method


def documented_keys() -> set[str]:
    return set(re.findall(r"`rewards/fspo/([a-z0-9_]+)`", README.read_text()))


@pytest.mark.parametrize("variant", ["sign_flip", "step_reward"])
def test_documented_metric_keys_are_the_logged_ones(llama_tokenizer, store, variant):
    from tests.fspo.test_reward import _batch

    texts, ids, rows = _batch(llama_tokenizer)
    reward = fspo.reward_from_config({"variant": variant, "nli": {"backend": "standin"}}, tokenizer=llama_tokenizer,
                                     store=store)
    out = reward(completions=texts, completion_ids=ids, rows=rows)
    assert documented_keys() - ENGINE_KEYS == set(out.diagnostics)
    assert all(isinstance(v, float) for v in out.diagnostics.values())


def test_hyperparameter_table_covers_the_config():
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(str(resources.files("factrl.configs").joinpath("method", "fspo.yaml")))
    text = README.read_text()
    for key in cfg:
        if key != "name":
            assert f"`{key}`" in text or f"`{key}.*`" in text, key
