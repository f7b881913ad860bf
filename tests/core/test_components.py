"""train/components.json: the contract check, writing, resuming and reuse."""
from __future__ import annotations

import json

import pytest

from factrl.harness.core.method import Method
from factrl.harness.training.components import (SCHEMA, check_components, read_components, stand_in_names,
                                                write_components)
from tests.core.toy_training import Toy

HEURISTIC = {"kind": "extractor", "backend": "heuristic", "model": None, "revision": None, "stand_in": True,
             "label": "heuristic extractor", "note": "not the paper's model"}


class Described(Toy):
    """The toy method with one stand-in component."""

    name = "described"
    parts: dict = {"extractor": HEURISTIC}

    def components(self, reward):
        return self.parts


def test_default_is_empty_and_stand_ins_are_sorted_names():
    assert Method().components(None) == {}
    settings = {**HEURISTIC, "kind": "settings", "stand_in": False, "label": "s"}
    assert stand_in_names({"z": HEURISTIC, "a": HEURISTIC, "s": settings}) == ["a", "z"]
    assert stand_in_names(None) == []


@pytest.mark.parametrize("bad, says", [
    ([], "must return a dict"),
    ({"x": {**HEURISTIC, "note": ""}}, "give a 'note'"),
    ({"x": {k: v for k, v in HEURISTIC.items() if k != "label"}}, "lacks label"),
    ({"x": {**HEURISTIC, "stand_in": "yes"}}, "true or false"),
    ({"x": {**HEURISTIC, "index": object()}}, "not plain JSON"),
])
def test_contract_violations_name_the_method_and_entry(bad, says):
    with pytest.raises(TypeError, match=says):
        check_components("plug", bad)


def test_written_file_and_a_changed_resume_keeps_the_previous(tmp_path):
    method = Described()
    assert write_components(tmp_path, method, None) == {"extractor": HEURISTIC}
    document = json.loads((tmp_path / "components.json").read_text())
    assert document == {"schema": SCHEMA, "method": "described", "method_version": "1",
                        "components": {"extractor": HEURISTIC}}
    write_components(tmp_path, method, None)  # same description on resume: file unchanged
    assert json.loads((tmp_path / "components.json").read_text()) == document
    method.parts = {"extractor": {**HEURISTIC, "backend": "llm"}}
    write_components(tmp_path, method, None)
    changed = json.loads((tmp_path / "components.json").read_text())
    assert changed["components"]["extractor"]["backend"] == "llm" and changed["previous"] == document
    assert read_components(tmp_path)["extractor"]["backend"] == "llm" and read_components(tmp_path / "x") is None


def test_finished_training_reuses_its_components(tmp_path):
    """A run whose training finished in an earlier attempt reports that attempt's components
    without building the reward again."""
    from factrl.harness.engine.config import compose
    from factrl.harness.training.engine import ADAPTER_DIR, DONE_MARKER, train

    out = tmp_path / "train"
    write_components(out, Described(), None)
    (out / ADAPTER_DIR).mkdir()
    (out / ADAPTER_DIR / "adapter_config.json").write_text("{}")
    (out / DONE_MARKER).write_text("ok\n")
    result = train(compose(["model=tiny-llama"]), Described(), None, tmp_path, [])
    assert result.model is None and result.components == {"extractor": HEURISTIC}


def test_engine_entries_join_the_methods_and_keep_their_names(tmp_path):
    from factrl.harness.engine.config import compose
    from factrl.harness.training.engine import engine_components

    train = compose(["model=tiny-llama", "train.advantage_std_floor=0.1"]).train
    engine = engine_components(train, "grpo")
    assert set(engine) == {"optimizer", "advantages", "fast_path"}
    assert set(engine_components(train, "ppo")) == {"optimizer", "fast_path"}
    assert not engine["fast_path"]["stand_in"]  # equal to TRL's path up to rounding: a speed setting
    written = write_components(tmp_path, Described(), None, engine=engine)
    assert set(written) == {"extractor", "optimizer", "advantages", "fast_path"}
    assert "advantages" in stand_in_names(written)  # the floor is no release's: tables mark the row
    assert json.loads((tmp_path / "components.json").read_text())["components"] == written

    class Clashing(Described):
        parts = {"optimizer": HEURISTIC}

    with pytest.raises(TypeError, match="optimizer, which the training engine records itself"):
        write_components(tmp_path / "x", Clashing(), None, engine=engine)
