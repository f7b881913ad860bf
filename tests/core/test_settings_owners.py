"""Every settings owner goes through the one parser: an unknown key gets the same one-line error
shape everywhere, and every shipped config (method x model protocols, experiments) parses."""
from __future__ import annotations

import importlib.util
import re

import pytest

from factrl.evals.settings import EvalSettings
from factrl.harness.engine.config import compose, group_options
from factrl.harness.core.errors import ConfigError
from factrl.harness.services.judge import read_settings
from factrl.harness.services.nli import parse_config
from factrl.harness.core.registry import get_method
from factrl.harness.core.rewards import ResponseRewardSettings
from factrl.harness.training.settings import PPOSettings, TrainSettings, VLLMSettings
from factrl.methods.corver.extractor import ExtractorSettings
from factrl.methods.corver.reward import CorpusRewardSettings

PLUGINS = {"nover": "factrl_nover", "truthrl": "factrl_truthrl", "binary_rar": "factrl_binary_rar", "rlcr": "factrl_rlcr"}
METHODS = ["corver", "fspo", "knowrl", "rlfh", "forag"] + [m for m, pkg in PLUGINS.items()
                                                           if importlib.util.find_spec(pkg) is not None]


def _run_groups() -> dict:
    """The run's other groups (harness/engine/run/settings.py `check_run_settings` parses them all)."""
    from factrl.evals.backends.base import Decoding
    from factrl.evals.backends.settings import OpenAIEvalSettings, VLLMEvalSettings
    from factrl.harness.services.corpus.settings import CorpusSettings
    from factrl.harness.services.evidence.settings import EvidenceSettings
    from factrl.harness.pool.settings import PoolFilterSettings, PoolSettings
    from factrl.harness.engine.run.settings import ClaimSettings, LauncherSettings
    from factrl.harness.core.timer import TimerSettings
    from factrl.leaderboard.settings import LeaderboardSettings

    return {"claim": ClaimSettings, "launcher": LauncherSettings, "timer": TimerSettings,
            "leaderboard": LeaderboardSettings, "pool": PoolSettings, "pool.filter": PoolFilterSettings,
            "corpus": CorpusSettings, "evidence": EvidenceSettings, "eval.openai": OpenAIEvalSettings,
            "eval.vllm": VLLMEvalSettings, "model.decoding": Decoding}


OWNERS = {
    **{f"method={name}": ("method", name) for name in METHODS},
    "train": ("train", TrainSettings),
    "train.ppo": ("train.ppo", PPOSettings),
    "train.vllm": ("train.vllm", VLLMSettings),
    "judge": ("judge", None),
    "nli": ("nli", None),
    "eval": ("eval", EvalSettings),
    "corpus reward": ("method", CorpusRewardSettings),
    "response reward": ("method", ResponseRewardSettings),
    "corver extractor": ("method.extractor", ExtractorSettings),
    **{owner: (owner, cls) for owner, cls in _run_groups().items()},
}


def _parse(owner_id: str, mapping: dict):
    """(the error text for `mapping`, the owner's valid keys, the method-name prefix or '')."""
    owner, target = OWNERS[owner_id]
    if owner_id.startswith("method="):
        cls = get_method(target)
        build, keys, prefix = (lambda m: cls(m)), cls.settings_class.keys(), f"method={target}: "
    elif owner_id == "judge":
        build = lambda m: read_settings({"backend": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m", **m})  # noqa: E731
        from factrl.harness.services.judge.settings import JudgeSettings

        keys, prefix = JudgeSettings.keys(), ""
    elif owner_id == "nli":
        from factrl.harness.services.nli.config import NLISettings

        build, keys, prefix = parse_config, NLISettings.keys(), ""
    elif target is PPOSettings:
        build, keys, prefix = (lambda m: PPOSettings.from_mapping(m, kl_coef=0.01)), PPOSettings.keys(), ""
    elif target is EvalSettings:
        build, keys, prefix = (lambda m: EvalSettings.from_config({"sets": ["demo"], **m})), EvalSettings.keys(), ""
    else:
        build, keys, prefix = target.from_mapping, target.keys(), ""
    with pytest.raises(ConfigError) as err:
        build(mapping)
    return str(err.value), keys, prefix


@pytest.mark.parametrize("owner_id", list(OWNERS))
def test_every_owner_refuses_an_unknown_key_with_the_same_one_line_shape(owner_id):
    owner = OWNERS[owner_id][0]
    message, keys, prefix = _parse(owner_id, {"zzz_unknown": 1})
    assert message == f"{prefix}{owner}.zzz_unknown: unknown key; valid: {', '.join(keys)}"
    near = keys[-1] + "x"  # one letter off a real key: the suggestion names it with its owner
    message, _, _ = _parse(owner_id, {near: 1})
    assert re.fullmatch(rf"{re.escape(prefix + owner)}\.{near}: unknown key \(did you mean "
                        rf"{re.escape(owner)}\.{keys[-1]}\?\); valid: .*", message), message
    assert "\n" not in message


def _configs():
    """Every shipped protocol method x model pair, each method alone and each experiment."""
    pairs = [tuple(name.split("_", 1)) for name in group_options("protocol/method_model")]
    out = [[f"method={m}", f"model={model}"] for m, model in pairs]
    out += [[f"method={m}"] for m in METHODS + ["raw"]]
    out += [[f"experiment={e}"] for e in group_options("experiment")]
    out += [[f"model={model}"] for model in group_options("model") if model != "custom"]
    return out


@pytest.mark.parametrize("overrides", _configs(), ids=lambda o: " ".join(o))
def test_every_shipped_config_parses(overrides):
    cfg = compose(overrides)
    method = get_method(str(cfg.method.name))(cfg.method)  # Method.settings
    train = TrainSettings.from_mapping(cfg.train)
    assert train.ppo_settings().kl_coef == cfg.train.beta
    EvalSettings.from_config(cfg.eval)
    judge = read_settings(cfg.judge)
    assert judge.backend == cfg.judge.backend
    if method.settings is not None and "nli" in method.settings.keys():
        parse_config(method.settings.nli)
