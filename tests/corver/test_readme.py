"""The method README documents exactly the metric keys the reward logs (its sections: tests/core/test_method_folders.py)."""
from __future__ import annotations

import re
from pathlib import Path

from factrl.methods import corver

README = Path(corver.__file__).with_name("README.md")
ENGINE_KEYS = {"no_signal"}  # added by the training engine for every method


def documented_keys() -> set[str]:
    return set(re.findall(r"`rewards/corver/([a-z0-9_]+)`", README.read_text()))


def test_documented_metric_keys_are_the_logged_ones(llama_tokenizer, counter):
    from tests.corver.test_method import C1, C2, ROWS, encode, method_cfg

    reward = corver.reward_from_config(method_cfg(aggregation="relcheck"), tokenizer=llama_tokenizer,
                                       counter=counter)
    out = reward(completions=[C1, C2], completion_ids=[encode(llama_tokenizer, C1), encode(llama_tokenizer, C2)],
                 rows=[ROWS["Q1"], ROWS["Q2"]])
    logged = set(out.diagnostics)
    assert documented_keys() - ENGINE_KEYS == logged
    assert all(isinstance(v, float) for v in out.diagnostics.values())
    # The key set does not depend on the variant (stable metric names).
    a1 = corver.reward_from_config(method_cfg(lambda_c=0), tokenizer=llama_tokenizer)
    assert set(a1(completions=[C1], completion_ids=[encode(llama_tokenizer, C1)], rows=[ROWS["Q1"]]).diagnostics) == logged


def test_hyperparameter_table_covers_the_config():
    from omegaconf import OmegaConf

    from importlib import resources

    cfg = OmegaConf.load(str(resources.files("factrl.configs").joinpath("method", "corver.yaml")))
    text = README.read_text()
    for key in cfg:
        if key not in ("name", "extractor"):
            assert f"`{key}`" in text, key
    for key in cfg.extractor:
        assert f"`extractor.{key}`" in text, key
