"""`harness run --help KEY`: one setting's type, range, default and help, from its settings class.

The help text is the field's `metadata["help"]` when it has one, else the comment the YAML that
holds its default writes beside it (configs/, the one place of every default and its source), so
a key is documented once. No torch here: the settings classes are light.
"""
from __future__ import annotations

import re
import typing
from importlib import resources
from typing import Any

from ...core.errors import SettingError
from ...core.settings import Settings, _fields, keys_of_options, unknown_key


def owners(method: str | None = None) -> dict[str, type]:
    """Every settings class of a run by the config path its keys live under."""
    from factrl.evals.backends.base import Decoding
    from factrl.evals.backends.settings import OpenAIEvalSettings, VLLMEvalSettings
    from factrl.evals.settings import EvalSettings
    from factrl.leaderboard.settings import LeaderboardSettings

    from ...services.corpus.settings import CorpusSettings
    from ...services.evidence.settings import EvidenceSettings
    from ...services.judge.settings import JudgeSettings
    from ...pool.settings import PoolFilterSettings, PoolSettings
    from ...core.timer import TimerSettings
    from ...training.settings import (LogprobSettings, LoRASettings, PPOSettings, RolloutSettings, TrainSettings,
                                     VLLMSettings)
    from .settings import ClaimSettings, LauncherSettings, RootSettings

    found: dict[str, type] = {
        "": RootSettings, "claim": ClaimSettings, "launcher": LauncherSettings, "timer": TimerSettings,
        "leaderboard": LeaderboardSettings, "pool": PoolSettings, "pool.filter": PoolFilterSettings,
        "corpus": CorpusSettings, "evidence": EvidenceSettings, "train": TrainSettings, "train.ppo": PPOSettings,
        "train.vllm": VLLMSettings, "train.rollout": RolloutSettings, "train.logprob": LogprobSettings,
        "lora": LoRASettings, "eval": EvalSettings, "eval.openai": OpenAIEvalSettings, "eval.vllm": VLLMEvalSettings,
        "model.decoding": Decoding, "judge": JudgeSettings}
    if method is None:  # the root default's method (configs/config.yaml `defaults:`)
        from ...core.settings import _raw_yaml

        listed = [item for item in _raw_yaml("config.yaml").get("defaults", []) if isinstance(item, dict)]
        method = next((str(item["method"]) for item in listed if "method" in item), None)
    if method is not None:
        from ...core.registry import get_method

        cls = getattr(get_method(method), "settings_class", None)
        if cls is not None:
            found["method"] = cls
    return found


def describe(key: str, method: str | None = None) -> str:
    """The help of `key` (`claim.stale_s`, `train.ppo.gamma`, `seed`, `method.threshold`), or a
    one-line SettingError for a key no settings class has."""
    table = owners(method)
    owner = max((o for o in table if o and key.startswith(o + ".")), key=len, default="")
    name = key[len(owner) + 1:] if owner else key
    cls = table[owner]
    fields = {f.name: f for f in _fields(cls) if not f.given}
    if name not in fields or fields[name].flat is not None:
        valid = [k for k in cls.keys() if k not in ("name",)] if owner else list(fields)
        raise SettingError(unknown_key(owner, name, valid))
    field = fields[name]
    spec = cls.RANGES.get(name)
    default, source, note = _default_and_comment(cls, owner, name)
    kind = _type_name(field.type)
    parts = [f"{key}: {kind}"]
    if spec and spec != "any":
        parts.append(f"allowed {spec}")
    if source is not None:
        parts.append(f"default {_yaml_value(default)} ({source})")
    text = next((f.metadata.get("help") for f in _dataclass_fields(cls) if f.name == name and f.metadata.get("help")),
                None) or note
    return "; ".join(parts) + (f"\n  {text}" if text else "")


def _dataclass_fields(cls: type) -> list[Any]:
    import dataclasses

    return list(dataclasses.fields(cls))


def _type_name(kind: Any) -> str:
    if isinstance(kind, type) and issubclass(kind, Settings):
        return f"a mapping ({kind.__name__})"
    text = str(kind) if typing.get_args(kind) else getattr(kind, "__name__", str(kind))
    return text.replace("typing.", "").replace("NoneType", "None")


def _yaml_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _default_and_comment(cls: type, owner: str, name: str) -> tuple[Any, str | None, str]:
    """(the default, where it lives, the YAML comment beside it); the file of the group's option
    that has the key when the class reads several (corpus, launcher, judge, ...)."""
    spec = cls.DEFAULTS if isinstance(cls.DEFAULTS, str) else None
    group = owner.split(".")[0]
    if owner and owner == group and group in ("corpus", "evidence", "pool", "launcher", "judge"):
        options = keys_of_options(group).get(name) or []
        if spec is None or name not in _node(spec):
            spec = f"{group}/{options[0]}.yaml" if options else spec
    if spec is None:
        return None, None, ""
    data = _node(spec)
    path, _, node = spec.partition(":")
    where = f"configs/{path}" + (f", {group}={path.split('/')[-1][:-5]}" if group in _groups() else "")
    return data.get(name), where if name in data else None, _comment(path, node, name)


def _groups() -> tuple[str, ...]:
    return ("corpus", "evidence", "pool", "launcher", "judge")


def _node(spec: str) -> dict[str, Any]:
    from ...core.settings import _raw_yaml

    path, _, node = spec.partition(":")
    data = _raw_yaml(path)
    for part in node.split(".") if node else ():
        data = data.get(part) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _comment(path: str, node: str, name: str) -> str:
    """The comment on `name`'s line in configs/<path> (under `node`), with its continuation lines."""
    lines = resources.files("factrl.configs").joinpath(path).read_text(encoding="utf-8").splitlines()
    start, indent = 0, 0
    for part in node.split(".") if node else ():
        pattern = re.compile(rf"^\s{{{indent}}}{re.escape(part)}:")
        start = next((i for i in range(start, len(lines)) if pattern.match(lines[i])), len(lines)) + 1
        indent += 2
    pattern = re.compile(rf"^(\s*){re.escape(name)}:[^#]*?(?:#\s?(.*))?$")
    for i in range(start, len(lines)):
        found = pattern.match(lines[i])
        if found and len(found.group(1)) >= indent - (2 if node else 0) and (node or not found.group(1)):
            text = [found.group(2) or ""]
            column = lines[i].find("#")
            for follow in lines[i + 1:]:
                if column > 0 and follow.strip().startswith("#") and follow.find("#") >= column:
                    text.append(follow.strip()[1:].strip())
                else:
                    break
            return " ".join(t for t in text if t)
    return ""


__all__ = ["describe", "owners"]
