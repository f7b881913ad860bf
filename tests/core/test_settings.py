"""The one settings parser (harness/core/settings.py): coercion by annotation, defaults from the YAML,
unknown keys with the closest one, `__post_init__` checks as one-line errors naming the key."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from omegaconf import OmegaConf

from factrl.harness.core.errors import ConfigError, closest, did_you_mean
from factrl.harness.core.settings import FLAT, GIVEN, Settings, defaults_from_yaml, in_range, parse


@dataclass(frozen=True)
class Inner(Settings):
    OWNER = "toy"
    DEFAULTS = {"weight": 1.0}

    weight: float


@dataclass(frozen=True)
class Toy(Settings):
    OWNER = "toy"
    DEFAULTS = {"steps": 3, "rate": 0.5, "mode": "a", "flag": True, "band": None, "pair": [1, 2], "names": ["x"],
                "extra": {}, "weight": 2.0}
    IGNORE = ("name",)

    steps: int
    rate: float
    mode: Literal["a", "b"]
    flag: bool
    band: tuple[float, ...] | None
    pair: tuple[int, int]
    names: list[str]
    extra: dict[str, Any]
    inner: Inner = field(metadata=FLAT)
    coef: float = field(default=0.0, metadata=GIVEN)

    def __post_init__(self) -> None:
        in_range("rate", self.rate, 0.0, 1.0)
        if self.mode == "b" and not self.flag:
            raise ValueError("b as the mode needs flag=true")


def test_defaults_fill_in_and_values_are_coerced_by_annotation():
    toy = Toy.from_mapping(OmegaConf.create({"name": "ignored", "steps": "4", "rate": 1, "band": [0, 1],
                                             "weight": 3}))
    assert (toy.steps, toy.rate, toy.mode, toy.flag, toy.band, toy.pair) == (4, 1.0, "a", True, (0.0, 1.0), (1, 2))
    assert isinstance(toy.rate, float) and toy.inner == Inner(weight=3.0) and toy.coef == 0.0
    assert Toy.from_mapping(coef=0.25).coef == 0.25 and Toy.from_mapping().inner.weight == 2.0
    assert Toy.keys() == ("steps", "rate", "mode", "flag", "band", "pair", "names", "extra", "weight")
    assert Toy.from_mapping().to_dict()["pair"] == [1, 2] and Toy.from_mapping().to_dict()["weight"] == 2.0


@pytest.mark.parametrize("given, message", [
    ({"stepz": 2}, "toy.stepz: unknown key (did you mean toy.steps?); valid: steps, rate, mode, flag, band, pair, "
                   "names, extra, weight"),
    ({"steps": "two"}, "toy.steps='two' is not an integer; set a whole number"),
    ({"steps": 2.5}, "toy.steps=2.5 is not an integer"),
    ({"rate": "fast"}, "toy.rate='fast' is not a number"),
    ({"rate": True}, "toy.rate=True is not a number"),
    ({"flag": "yes"}, "toy.flag='yes' must be true or false"),
    ({"mode": "c"}, "toy.mode='c': choose one of a, b"),
    ({"pair": [1]}, "toy.pair=[1] must hold 2 values"),
    ({"names": "x"}, "toy.names='x' must be a list"),
    ({"extra": 3}, "toy.extra=3 must be a mapping"),
    ({"steps": None}, "toy.steps=null is not allowed"),
    ({"weight": "heavy"}, "toy.weight='heavy' is not a number"),
    ({"rate": 2}, "toy.rate=2 is out of range; set a value between 0 and 1"),
    ({"mode": "b", "flag": False}, "toy: b as the mode needs flag=true"),
])
def test_every_bad_value_is_one_line_naming_the_key(given, message):
    with pytest.raises(ConfigError) as err:
        Toy.from_mapping(given)
    assert str(err.value) == message or str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_a_missing_value_without_a_default_names_the_key_and_the_yaml():
    @dataclass(frozen=True)
    class Needs(Settings):
        OWNER = "train"
        DEFAULTS = "train/default.yaml"

        steps: int
        not_in_yaml: int

    with pytest.raises(ConfigError, match=r"^train.not_in_yaml: missing; set it \(configs/train/default.yaml"):
        Needs.from_mapping()
    with pytest.raises(ConfigError, match=r"^x.coef: missing; pass it"):
        @dataclass(frozen=True)
        class Handed(Settings):
            coef: float = field(metadata=GIVEN)

        parse(Handed, {}, owner="x")


def test_defaults_from_yaml_reads_the_shipped_file_and_node():
    assert defaults_from_yaml("train/default.yaml:ppo")["epochs"] == 4
    train = defaults_from_yaml("train/default.yaml")
    assert train["steps"] == 100 and "seed" not in train  # ${seed} is the root config's
    assert "base_url" not in defaults_from_yaml("judge/openai.yaml")  # ??? = the caller must give it
    first = defaults_from_yaml("method/fspo.yaml")
    first["nli"]["backend"] = "changed"
    assert defaults_from_yaml("method/fspo.yaml")["nli"]["backend"] == "hhem"  # a fresh copy each time


def test_closest_and_did_you_mean():
    assert closest("corver", ["corver-official", "default"]) == "corver-official"  # a unique prefix
    assert closest("stepz", ["steps", "seed"]) == "steps" and closest("zzz", ["steps"]) is None
    assert did_you_mean("tiny-lama", ["tiny-llama"]) == " Did you mean 'tiny-llama'?"
    assert did_you_mean("zzz", ["tiny-llama"]) == ""
