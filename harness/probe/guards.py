"""The guarded variants the probe scores beside the originals (`harness probe --guarded`).

configs/probe/guards.yaml names, per method, the `method.*` values of its named guards
(docs/CONTRACTS.md "Guards"): CorVer `correctness: strict` + `format_rule: single_block`, FSPO
`correctness: strict`, RLFH and FoRAG `dedupe_statements` + `max_rewarded_statements`. The
variant is the composed config with those values set, so the method parses and records them as
it would in a run (its settings component's `guards` list marks the table's column).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ..core.settings import Settings


@dataclass(frozen=True)
class ProbeGuards(Settings):
    """`guards.<method>.<key>: value` (configs/probe/guards.yaml)."""

    OWNER = "probe"
    DEFAULTS = "probe/guards.yaml"

    guards: dict[str, Any]

    def __post_init__(self) -> None:
        for name, values in self.guards.items():
            if not isinstance(values, dict) or not values:
                raise ValueError(f"guards.{name}: give the method's guard settings as key: value lines")


def load_guards(path: str | None = None) -> ProbeGuards:
    """The packaged guards, or those of a YAML file with the same shape."""
    if path is None:
        return ProbeGuards.from_mapping()
    import yaml

    from ..core.errors import ConfigError

    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"harness probe --guards-file {path}: cannot read it ({err}); give a YAML file like "
                          f"configs/probe/guards.yaml") from None
    return ProbeGuards.from_mapping(data)


def guarded_config(cfg: Any, guards: ProbeGuards) -> Any | None:
    """The composed config with the method's guards on, or None when it has none listed."""
    from omegaconf import open_dict

    values = guards.guards.get(str(cfg.method.name))
    if not values:
        return None
    out = copy.deepcopy(cfg)
    with open_dict(out):
        for key, value in values.items():
            out.method[key] = value
    return out


def obeying_config(cfg: Any) -> Any:
    """The composed config with the reference judge answering as a weak judge that follows grading
    advice inside the material (`judge.obey_material=true`; harness/services/judge/reference.py)."""
    from omegaconf import open_dict

    out = copy.deepcopy(cfg)
    with open_dict(out):
        out.judge["obey_material"] = True
    return out
