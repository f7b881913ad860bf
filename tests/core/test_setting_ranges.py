"""Every numeric setting has a declared range (Settings.RANGES, harness/core/settings.py) and a value
outside it is refused with one line naming the key and the range; `harness run` refuses one
before it loads anything (the decimal training settings used to crash after the model loaded,
or were accepted: train.learning_rate=-1, train.temperature=-1, train.beta=-1,
train.weight_decay=-5, train.top_p=0)."""
from __future__ import annotations

import importlib
import math
import pkgutil
import typing

import pytest

from factrl.harness.core.errors import ConfigError
from factrl.harness.core.settings import Settings, _fields, interval, parse
from tests.helpers import harness

PACKAGES = ("factrl.harness", "factrl.evals", "factrl.methods", "factrl.leaderboard", "factrl_nover", "factrl_truthrl",
            "factrl_binary_rar", "factrl_rlcr")


def _settings_classes() -> list[type]:
    for name in PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, name + "."):
            if not any(part in info.name for part in ("__main__", ".cli", "vllm", "deepspeed")):
                try:
                    importlib.import_module(info.name)
                except ImportError:  # optional GPU extras
                    pass

    def below(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from below(sub)

    # Product classes only: a test module's own Settings subclasses (imported first when another
    # test file ran earlier in this worker) are no settings of the harness.
    ours = [c for c in set(below(Settings)) if c.__module__.startswith(PACKAGES)]
    return sorted(ours, key=lambda c: f"{c.__module__}.{c.__name__}")


def _numeric(field) -> bool:
    kinds = [field.type, *typing.get_args(field.type)]
    kinds += [a for k in kinds for a in typing.get_args(k)]  # list[float]
    return any(k in (int, float) for k in kinds)


CLASSES = _settings_classes()
# How to build each class whose defaults leave something for the caller (a GIVEN value, the
# root's ${seed}, a backend file).
EXTRA = {"TrainSettings": {"seed": 42}, "ExtractorSettings": {"seed": 42}}
GIVEN = {"PPOSettings": {"kl_coef": 0.01}, "Decoding": {"seed": None}}


def _build(cls, key=None, value=None):
    changes = {**EXTRA.get(cls.__name__, {})}
    if key is not None and key not in GIVEN.get(cls.__name__, {}):
        changes[key] = value
    given = {**GIVEN.get(cls.__name__, {})}
    if key in given:
        given[key] = value
    if cls.__name__ == "JudgeSettings":  # the served judge; the local server's own keys on judge=embedded
        from factrl.harness.services.judge.settings import EMBEDDED_ONLY
        from factrl.harness.core.settings import defaults_from_yaml

        backend = "embedded" if key in EMBEDDED_ONLY else "openai"
        base = {**defaults_from_yaml(f"judge/{backend}.yaml"), "base_url": "http://127.0.0.1:1/v1", "model": "m"}
        return parse(cls, {**base, **changes}, defaults=base)
    if cls.__name__ == "NLISettings":  # a backend's own keys on that backend
        changes.setdefault("backend", {"max_premise_tokens": "hhem", "max_length": "deberta"}.get(key, "standin"))
    return cls.from_mapping(changes, **given)


def test_the_classes_are_found():
    names = {c.__name__ for c in CLASSES}
    assert {"TrainSettings", "PPOSettings", "VLLMSettings", "LoRASettings", "EvalSettings", "JudgeSettings",
            "ReferenceSettings", "NLISettings", "KnowRLSettings", "RLFHSettings", "FoRAGSettings", "FSPOSettings",
            "CorVerSettings", "ExtractorSettings", "NoverSettings", "TruthRLSettings", "BinaryRARSettings",
            "RLCRSettings"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_numeric_setting_declares_its_range(cls):
    numeric = {f.name for f in _fields(cls) if f.flat is None and _numeric(f)}
    assert numeric <= set(cls.RANGES), f"{cls.__name__}: no range for {sorted(numeric - set(cls.RANGES))}"
    assert set(cls.RANGES) <= numeric, f"{cls.__name__}: a range for no numeric key"
    for spec in cls.RANGES.values():
        interval(spec)  # well formed
    if cls.DEFAULTS is not None or cls.__name__ in ("JudgeSettings", "NLISettings"):
        _build(cls)  # the defaults lie inside their ranges


def _outside(spec: str, integer: bool) -> list[float]:
    low, high, low_in, high_in = interval(spec)
    out = []
    if math.isfinite(low):
        out.append(low - 1 if integer or low_in else low)
    if math.isfinite(high):
        out.append(high + 1 if integer or high_in else high)
    return out


def _integer(cls, key: str) -> bool:
    field = next(f for f in _fields(cls) if f.name == key)
    return int in [field.type, *typing.get_args(field.type)]


CASES = [(cls, key, value) for cls in CLASSES if cls.DEFAULTS is not None or cls.__name__ in ("JudgeSettings",
                                                                                               "NLISettings")
         for key, spec in cls.RANGES.items() if spec != "any" for value in _outside(spec, _integer(cls, key))]


@pytest.mark.parametrize("cls, key, value", CASES, ids=lambda x: getattr(x, "__name__", str(x)))
def test_a_value_outside_its_range_is_one_line_naming_the_key(cls, key, value):
    field = next(f for f in _fields(cls) if f.name == key)
    if typing.get_origin(field.type) is list or list in typing.get_args(field.type):
        value = [value, value]
    with pytest.raises(ConfigError) as err:
        _build(cls, key, value)
    message = str(err.value)
    assert "\n" not in message and f"{key}=" in message, message


@pytest.mark.parametrize("override, message", [
    ("train.learning_rate=-1", "train.learning_rate=-1 is out of range; allowed: (0, 1]"),
    ("train.temperature=-1", "train.temperature=-1 is out of range; allowed: (0, inf)"),
    ("train.beta=-1", "train.beta=-1 is out of range; allowed: [0, inf)"),
    ("lora.dropout=1", "lora.dropout=1 is out of range; allowed: [0, 1)"),
    ("judge=openai judge.timeout=-1", "judge.timeout=-1 is out of range; allowed: (0, inf)"),  # raw opens none
])
def test_harness_run_refuses_before_anything_loads(tmp_path, override, message):
    """Through the real CLI (train.weight_decay=-5 and train.top_p=0 are refused the same way:
    the parametrised test above)."""
    out = tmp_path / "runs"
    result = harness("run", "method=raw", *override.split(), f"output_dir={out}", f"leaderboard.store={tmp_path / 'lb.sqlite'}",
                     timeout=120)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and lines == [f"harness run: error: {message}"], result.stderr[-2000:]
    assert not out.exists()  # nothing made, nothing loaded
