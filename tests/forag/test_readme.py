"""The method README documents exactly the metric keys the reward logs (its sections: tests/core/test_method_folders.py)."""
from __future__ import annotations

from factrl.methods.forag.reward import DIAGNOSTIC_KEYS
from tests import method_readme


def documented_keys() -> set[str]:
    return method_readme.documented_keys("forag")


def test_documented_keys_are_the_diagnostics():
    assert documented_keys() - {"no_signal"} == set(DIAGNOSTIC_KEYS)  # the engine's (and TRL's) keys


def test_hyperparameter_table_covers_the_config():
    method_readme.assert_config_documented("forag", nested=())
