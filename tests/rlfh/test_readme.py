"""The method README documents exactly the metric keys the reward logs (its sections: tests/core/test_method_folders.py)."""
from __future__ import annotations

from factrl.methods.rlfh.reward import DIAGNOSTIC_KEYS
from tests import method_readme


def documented_keys() -> set[str]:
    return method_readme.documented_keys("rlfh")


def test_documented_keys_are_the_diagnostics():
    assert documented_keys() - {"no_signal"} == set(DIAGNOSTIC_KEYS)  # the engine's (and TRL's) keys


def test_hyperparameter_table_covers_the_config():
    method_readme.assert_config_documented("rlfh", nested=())


def test_fidelity_table_names_every_setting_and_its_source():
    """Every key of configs/method/rlfh.yaml that changes a number has a row, and every row
    cites the original (file:line, the README, or the CorVer paper) and says same / differs."""
    from importlib import resources

    from omegaconf import OmegaConf

    text = method_readme.readme("rlfh")
    table = text[text.index("## Fidelity"):text.index("## Results against the paper")]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| setting")]
    assert len(rows) >= 30
    assert all(line.rstrip().endswith("|") and line.count(" | ") >= 3 for line in rows)
    verdicts = [line.rsplit(" | ", 1)[1] for line in rows]
    assert all(v.startswith(("same", "differs")) for v in verdicts), verdicts
    cfg = OmegaConf.load(str(resources.files("factrl.configs").joinpath("method", "rlfh.yaml")))
    named = {"constants": "constants", "granularity": "granularity", "judge_failure": "failed items", "parser": "verify parse",
             "decoding": "extract decoding", "tries": "tries", "echo_min_share": "echo location", "max_secs": "gold sentence",
             "max_words_per_sec": "sections", "gold_material": "gold sentence", "drop_hedges": "hedge filter",
             "dedupe_statements": "guards", "max_rewarded_statements": "guards", "answer_gate": "guards",
             "positive_cap": "guards", "answer_once": "guards",
             "alignment_threshold": "alignment",
             "splitter": "alignment"}
    assert set(named) == set(cfg) - {"name"}
    assert all(any(line.startswith(f"| {row} |") for line in rows) for row in named.values())
