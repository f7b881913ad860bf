"""One parser for every settings class: typed by annotation, defaults from the YAML, one-line errors.

A settings class is a frozen dataclass subclassing `Settings`:

    @dataclass(frozen=True)
    class FSPOSettings(Settings):
        OWNER = "method"                   # the config path its keys live under (errors name it)
        DEFAULTS = "method/fspo.yaml"      # where its defaults live (configs/...; ":a.b" picks a node)
        IGNORE = ("name",)                 # keys of the same node that are not settings
        variant: str                       # no dataclass defaults: the YAML is the one place
        threshold: float

        def __post_init__(self):           # ranges and consistency; the message starts with the key
            if not 0 <= self.threshold <= 1:
                raise ValueError(f"threshold={self.threshold} must lie in [0, 1]")

    FSPOSettings.from_mapping(cfg.method)            # a composed node (every key present)
    FSPOSettings.from_mapping({"threshold": 0.7})    # a partial dict: the rest from the YAML
    FSPOSettings.from_mapping(variant="step_reward") # keyword changes, same checks

Every int or float field declares its allowed range in `RANGES` ({key: "(0, 1]", "[1, inf)",
"any"}; a list field's range applies to each element; None passes where the field is
Optional): `parse` refuses a value outside it with one line naming the key and the range
(`train.learning_rate=-1 is out of range; allowed: (0, 1]`), after the class's own
`__post_init__` checks. tests/core/test_setting_ranges.py holds every settings class to it.

`parse` coerces every value by its annotation (bool, int, float, str, Optional, Literal,
tuple / list of those, dict, a nested `Settings` class), rejects an unknown key with the
closest valid one, and turns the `__post_init__` ValueError into a one-line `SettingError`
(a ConfigError, and a ValueError) prefixed by the owner: `method.threshold=1.5 must lie in [0, 1]`. A field marked `field(metadata=FLAT)`
holds another settings class whose keys sit on the same node (CorVer's response and corpus
rewards share `method.*`); one marked `field(metadata=GIVEN)` is no key of the node but a value
the caller passes as a keyword. docs/CONTRACTS.md, "Settings", is the guide.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import re
import types
import typing
from typing import Any, ClassVar, Literal, Mapping, Union

from .errors import ConfigError, SettingError, closest


FLAT = {"flat": True}  # field metadata: a nested settings class whose keys share this node
# Field metadata: a value the caller hands over (`from_mapping(..., kl_coef=train.beta)`), not a
# key of this node (PPO's KL coefficient is `train.beta`, not `train.ppo.*`).
GIVEN = {"given": True}
_ABSENT = object()
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def defaults_from_yaml(spec: str) -> dict[str, Any]:
    """The values of `configs/<file>[:<dotted.node>]` as plain data (a fresh copy).

    Hydra's `defaults:` list is dropped; values still to be filled in (`???`) or set by the
    root config (`${seed}`) are left out, so a caller that does not give them hears so.
    """
    path, _, node = spec.partition(":")
    data: Any = _load_yaml(path)
    for part in node.split(".") if node else ():
        if not isinstance(data, dict) or part not in data:
            raise KeyError(f"configs/{path} has no node {node!r}")
        data = data[part]
    return copy.deepcopy(data)


@functools.lru_cache(maxsize=None)
def _load_yaml(path: str) -> Any:
    data = copy.deepcopy(_raw_yaml(path))
    if isinstance(data, dict):
        data.pop("defaults", None)
    return _drop_unset(data)


def option_defaults(group: str, option: str) -> dict[str, Any]:
    """The values of the config option `group=option` (configs/<group>/<option>.yaml) over those
    of the same group's files its `defaults:` list names first (launcher/accelerate.yaml starts
    from none.yaml), as `harness run group=option` composes them; `???` and `${...}` left out."""
    out: dict[str, Any] = {}
    for name in _same_group_defaults(group, option):
        out.update(option_defaults(group, name))
    out.update(defaults_from_yaml(f"{group}/{option}.yaml"))
    return out


def option_names(group: str) -> list[str]:
    """The options of a config group: the names of configs/<group>/*.yaml."""
    from importlib import resources

    folder = resources.files("factrl.configs").joinpath(group)
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def option_keys(group: str, option: str) -> tuple[str, ...]:
    """Every key of `group=option`, the ones still to be filled in (`???`, `${...}`) included."""
    keys: dict[str, None] = {}
    for name in _same_group_defaults(group, option):
        keys.update(dict.fromkeys(option_keys(group, name)))
    data = _raw_yaml(f"{group}/{option}.yaml")
    keys.update(dict.fromkeys(str(k) for k in data if k != "defaults") if isinstance(data, dict) else {})
    return tuple(keys)


def keys_of_options(group: str) -> dict[str, list[str]]:
    """{key: the options of `group` that have it} over every configs/<group>/*.yaml."""
    out: dict[str, list[str]] = {}
    for option in option_names(group):
        for key in option_keys(group, option):
            out.setdefault(key, []).append(option)
    return out


def _same_group_defaults(group: str, option: str) -> list[str]:
    data = _raw_yaml(f"{group}/{option}.yaml")
    listed = data.get("defaults") if isinstance(data, dict) else None
    return [item for item in listed or [] if isinstance(item, str) and item != "_self_" and "/" not in item]


@functools.lru_cache(maxsize=None)
def _raw_yaml(path: str) -> Any:
    from importlib import resources

    from omegaconf import OmegaConf

    text = resources.files("factrl.configs").joinpath(path).read_text(encoding="utf-8")
    return OmegaConf.to_container(OmegaConf.create(text), resolve=False)


def _drop_unset(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _drop_unset(v) for k, v in data.items() if not _unset(v)}
    return data


def _unset(value: Any) -> bool:
    return isinstance(value, str) and (value == "???" or value.startswith("${"))


def plain(node: Any) -> Any:
    """An OmegaConf node (or a plain value) as plain, resolved Python data."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    if isinstance(node, (DictConfig, ListConfig)):
        return OmegaConf.to_container(node, resolve=True)
    if isinstance(node, Settings):
        return node.to_dict()
    return node


class Settings:
    """Base of the frozen settings dataclasses (module docstring)."""

    OWNER: ClassVar[str] = ""
    DEFAULTS: ClassVar[Any] = None  # "file.yaml[:node]" under configs/, a mapping, or None (no defaults)
    IGNORE: ClassVar[tuple[str, ...]] = ()
    RANGES: ClassVar[dict[str, str]] = {}  # numeric key -> allowed interval ("(0, 1]", "[1, inf)", "any")

    @classmethod
    def from_mapping(cls, mapping: Any = None, *, owner: str | None = None, **changes: Any):
        """Parse `mapping` (dict or OmegaConf node; None = {}) plus `changes` over the defaults."""
        given = plain(mapping)
        if given is not None and not isinstance(given, Mapping):
            raise SettingError(f"{owner or cls.OWNER}: expected a mapping of settings, got {type(given).__name__}")
        handed = {k: changes.pop(k) for k in list(changes) if k in _given(cls)}
        return parse(cls, {**(given or {}), **changes}, owner=owner, given=handed)

    @classmethod
    def default_values(cls) -> dict[str, Any]:
        """The defaults `from_mapping` fills in for absent keys."""
        source = cls.DEFAULTS
        if source is None:
            return {}
        if isinstance(source, str):
            return defaults_from_yaml(source)
        return copy.deepcopy(dict(source))

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """Every key this class reads from its node (nested FLAT classes' keys included)."""
        return tuple(_spec(cls))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values by key (tuples as lists; FLAT parts merged in, nested ones as dicts)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("flat"):
                out.update(value.to_dict())
            else:
                out[f.name] = _jsonable(value)
        return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, Settings):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    type: Any
    flat: type | None  # the nested class of a FLAT field
    default: Any  # _ABSENT when the field has no dataclass default
    given: bool  # a GIVEN field: passed by the caller, not read from the node


@functools.lru_cache(maxsize=None)
def _fields(cls: type) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else _ABSENT)
        out.append(_Field(f.name, hints[f.name], hints[f.name] if f.metadata.get("flat") else None, default,
                          bool(f.metadata.get("given"))))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def _spec(cls: type) -> dict[str, None]:
    keys: dict[str, None] = {}
    for f in _fields(cls):
        if not f.given:
            keys.update(_spec(f.flat) if f.flat is not None else {f.name: None})
    return keys


@functools.lru_cache(maxsize=None)
def _given(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in _fields(cls) if f.given)


def unknown_key(owner: str, key: str, valid: typing.Iterable[str],
                elsewhere: Mapping[str, typing.Sequence[str]] | None = None) -> str:
    """The one-line message for a key `owner` does not have: `owner.key: unknown key (did you
    mean owner.k?); valid: a, b, ...` (also used for Hydra's "not in struct", harness/engine/config.py).

    `elsewhere`: keys that other options of the same config group have ({key: [option, ...]});
    when the closest key is one of them, the line names the options that have it:
    `judge.bse_url: unknown key (did you mean judge.base_url? an option of judge=embedded,
    judge=openai); valid: ...`; a key spelled right that only other options have:
    `model.seed: unknown key (not a key of this model option; an option of model=custom); valid: ...`."""
    valid = list(valid)
    others = {k: v for k, v in (elsewhere or {}).items() if k not in valid}
    where = f"{owner}.{key}" if owner else str(key)
    hint = closest(str(key), [*valid, *others])
    prefix = owner + "." if owner else ""
    if hint == key and hint in others:  # spelled right, but the chosen option has no such key
        options = ", ".join(f"{owner}={option}" for option in others[hint])
        suggestion = f" (not a key of this {owner} option; an option of {options})"
    elif hint in others:
        options = ", ".join(f"{owner}={option}" for option in others[hint])
        suggestion = f" (did you mean {prefix}{hint}? an option of {options})"
    else:
        suggestion = f" (did you mean {prefix}{hint}?)" if hint else ""
    return f"{where}: unknown key{suggestion}; valid: {', '.join(valid)}"


def parse(cls: type, mapping: Mapping[str, Any] | None, *, owner: str | None = None,
          defaults: Mapping[str, Any] | None = None, given: Mapping[str, Any] | None = None):
    """An instance of the settings dataclass `cls` from `mapping` over `defaults` (default:
    `cls.default_values()`), GIVEN fields from `given`; ConfigError, one line naming
    `owner.key`, on any bad value."""
    owner = cls.OWNER if owner is None else owner
    node = {k: v for k, v in dict(mapping or {}).items() if k not in cls.IGNORE}
    valid = _spec(cls)
    for key in node:
        if key not in valid:
            raise SettingError(unknown_key(owner, key, valid))
    merged = {**(cls.default_values() if defaults is None else dict(defaults)), **node}
    values: dict[str, Any] = {}
    for f in _fields(cls):
        if f.flat is not None:
            part = {k: merged[k] for k in _spec(f.flat) if k in merged}
            values[f.name] = parse(f.flat, part, owner=owner)
            continue
        value = (given or {}).get(f.name, _ABSENT) if f.given else merged.get(f.name, _ABSENT)
        if value is _ABSENT:
            if f.given and f.default is _ABSENT:
                raise SettingError(f"{_at(owner, f.name)}: missing; pass it to {cls.__name__}.from_mapping")
            if f.default is _ABSENT:
                source = f" (configs/{cls.DEFAULTS} documents it)" if isinstance(cls.DEFAULTS, str) else ""
                raise SettingError(f"{_at(owner, f.name)}: missing; set it{source}")
            value = f.default
        values[f.name] = coerce(value, f.type, _at(owner, f.name))
    try:
        made = cls(**values)
    except ConfigError:
        raise
    except (ValueError, TypeError) as err:
        raise SettingError(_prefixed(owner, str(err), valid)) from None
    for name, spec in cls.RANGES.items():
        check_range(_at(owner, name), values.get(name), spec)
    return made


_INTERVAL = re.compile(r"^([\[(])\s*(-?inf|[-+0-9.e]+)\s*,\s*(-?inf|[-+0-9.e]+)\s*([\])])$")


@functools.lru_cache(maxsize=None)
def interval(spec: str) -> tuple[float, float, bool, bool] | None:
    """(low, high, low included, high included) of "(0, 1]"-style text; None for "any"."""
    if spec == "any":
        return None
    match = _INTERVAL.match(spec)
    if not match:
        raise ValueError(f"range {spec!r}: write it as an interval, e.g. \"(0, 1]\" or \"[1, inf)\", or \"any\"")
    return float(match.group(2)), float(match.group(3)), match.group(1) == "[", match.group(4) == "]"


def check_ranges(cls: type, node: Any, owner: str | None = None) -> None:
    """The numeric keys of `node` against `cls.RANGES` alone (each coerced by its annotation),
    for a group whose other checks wait until it is used (`judge.*`: a run whose method opens
    no judge need not name a judge model, but `judge.timeout=-1` is refused up front)."""
    data = plain(node) or {}
    hints = {f.name: f.type for f in _fields(cls)}
    where = cls.OWNER if owner is None else owner
    for key, spec in cls.RANGES.items():
        if key in data and data[key] is not None:
            check_range(_at(where, key), coerce(data[key], hints[key], _at(where, key)), spec)


def check_range(where: str, value: Any, spec: str) -> None:
    """A SettingError, one line naming `where` and the range, when `value` (or an element of a
    list) lies outside `spec`; None passes (an Optional field that is off)."""
    bounds = interval(spec)
    if bounds is None or value is None:
        return
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if item is None or isinstance(item, bool) or not isinstance(item, (int, float)):
            continue
        low, high, low_in, high_in = bounds
        inside = (item > low or (low_in and item == low)) and (item < high or (high_in and item == high))
        if not inside or item != item:  # NaN is never inside
            raise SettingError(f"{where}={item:g} is out of range; allowed: {spec}")


def _at(owner: str, key: str) -> str:
    return f"{owner}.{key}" if owner else key


def _prefixed(owner: str, message: str, valid: Mapping[str, None]) -> str:
    """`owner.` before a message that starts with one of the class's keys, else `owner: `."""
    if not owner:
        return message
    head = _KEY.match(message)
    return f"{owner}.{message}" if head and head.group(0) in valid else f"{owner}: {message}"


def coerce(value: Any, kind: Any, where: str) -> Any:
    """`value` as the annotation `kind` says, or a ConfigError naming `where` (e.g. `judge.timeout`)."""
    value = plain(value)
    origin = typing.get_origin(kind)
    if kind is Any or kind is object:
        return value
    if origin in (Union, types.UnionType):
        options = [a for a in typing.get_args(kind) if a is not type(None)]
        if value is None:
            if len(options) < len(typing.get_args(kind)):
                return None
            raise SettingError(f"{where}=null is not allowed; set a value")
        errors = []
        for option in options:
            try:
                return coerce(value, option, where)
            except ConfigError as err:
                errors.append(err)
        raise errors[0]
    if origin is Literal:
        choices = typing.get_args(kind)
        for choice in choices:
            if value == choice and type(value) is type(choice):
                return choice
        raise SettingError(f"{where}={value!r}: choose one of {', '.join(str(c) for c in choices)}")
    if value is None:
        raise SettingError(f"{where}=null is not allowed; set a value")
    if isinstance(kind, type) and issubclass(kind, Settings):
        if not isinstance(value, Mapping):
            raise SettingError(f"{where}={value!r} must be a mapping of {kind.__name__} keys")
        return parse(kind, value, owner=where)
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise SettingError(f"{where}={value!r} must be true or false")
    if kind is int:
        return _integer(value, where)
    if kind is float:
        return _number(value, where)
    if kind is str:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)  # `judge.model=7` arrives as an int
        raise SettingError(f"{where}={value!r} must be a string")
    if origin in (tuple, list) or kind in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise SettingError(f"{where}={value!r} must be a list")
        args = typing.get_args(kind)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                raise SettingError(f"{where}={list(value)} must hold {len(args)} values")
            items = [coerce(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(value, args))]
        else:
            item = args[0] if args else Any
            items = [coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if (origin or kind) is tuple else items
    if origin in (dict, Mapping) or kind in (dict, Mapping) or origin is typing.get_origin(Mapping[str, Any]):
        if not isinstance(value, Mapping):
            raise SettingError(f"{where}={value!r} must be a mapping")
        return dict(value)
    raise TypeError(f"{where}: the settings parser does not handle the annotation {kind!r}")


def _integer(value: Any, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise SettingError(f"{where}={value!r} is not an integer; set a whole number")


def _number(value: Any, where: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise SettingError(f"{where}={value!r} is not a number; set a number")


def in_range(key: str, value: float, low: float | None = None, high: float | None = None) -> None:
    """For `__post_init__`: a ValueError `key=value is out of range; set a value between ...`."""
    if (low is not None and value < low) or (high is not None and value > high):
        bound = (f"between {low:g} and {high:g}" if low is not None and high is not None
                 else f">= {low:g}" if low is not None else f"<= {high:g}")
        raise ValueError(f"{key}={value:g} is out of range; set a value {bound}")


__all__ = ["FLAT", "GIVEN", "Settings", "check_range", "check_ranges", "coerce", "defaults_from_yaml", "in_range", "interval",
           "keys_of_options", "option_defaults", "option_keys", "option_names", "parse", "plain", "unknown_key"]
