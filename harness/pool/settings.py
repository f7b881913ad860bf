"""The `pool` config group (configs/pool/{demo,file}.yaml) as checked settings.

An absent key takes the value of the option's file (the node's `name` when it is a shipped
option, else the file of its `source`; without either, file.yaml when a `path` is given, else
demo.yaml). Two keys come from elsewhere: `shuffle_seed` is the
root's `${seed}` (None, as when a caller leaves it out: no shuffle) and `filter.max_new_tokens`
is `${train.max_completion_length}` (None: the caller's). `evidence_only` is set with
`+pool.evidence_only=true` and is absent from the YAML so that runs without it keep their config
hash (harness/pool/load.py `load_pool`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import SettingError
from ..core.settings import Settings, option_defaults, option_names, parse, plain

SOURCES = ("demo", "file")
DEDUP_MISSING = ("error", "warn")


@dataclass(frozen=True)
class PoolFilterSettings(Settings):
    """`pool.filter.*`: `harness pool filter` (docs/PROTOCOL.md §4 self-filter)."""

    OWNER = "pool.filter"
    DEFAULTS = "pool/demo.yaml:filter"
    RANGES = {"completions": "[1, inf)", "temperature": "(0, inf)", "top_p": "(0, 1]", "max_new_tokens": "[1, inf)",
              "anchors": "[0, inf)", "batch_size": "[1, inf)"}

    completions: int  # G samples per question
    temperature: float
    top_p: float
    anchors: int  # mastered questions to keep
    batch_size: int  # questions per generate call
    out: str | None  # None: <output_dir>/pools/<pool>-<model>-filtered.json
    restart: bool  # discard a progress file made with other settings
    max_new_tokens: int | None = None  # ${train.max_completion_length} in the YAML


@dataclass(frozen=True)
class PoolSettings(Settings):
    """`pool.*` (configs/pool/*.yaml document each key)."""

    OWNER = "pool"
    DEFAULTS = "pool/demo.yaml"  # the root default; from_mapping picks the option's own file
    RANGES = {"shuffle_seed": "[0, 4294967295]", "limit": "[1, inf)"}

    name: str
    source: str  # demo | file
    path: str | None  # pool=file: the pool file
    limit: int | None  # the first N questions after dedup; None: all
    dedup_missing: str  # error | warn
    dedup_against: list[str]  # evaluation sets whose questions leave the pool
    filter: PoolFilterSettings
    shuffle_seed: int | None = None  # ${seed} in the YAML; None: no shuffle
    evidence_only: bool = False  # +pool.evidence_only=true (module docstring)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source={self.source!r} is not valid; use demo or file")
        if self.source == "file" and self.path in (None, "", "???"):
            raise ValueError("path: missing; pool=file needs pool.path=FILE (a JSON list or JSONL of "
                             "{question, answers, title})")
        if self.dedup_missing not in DEDUP_MISSING:
            raise ValueError(f"dedup_missing={self.dedup_missing!r}: use error or warn")

    @classmethod
    def from_mapping(cls, mapping: Any = None, *, owner: str | None = None, **changes: Any) -> "PoolSettings":
        data = {**dict(plain(mapping) or {}), **changes}
        name, source = data.get("name"), data.get("source") or ("file" if data.get("path") else "demo")
        option = str(name) if name in option_names("pool") else source if source in SOURCES else None
        if option is None:
            raise SettingError(f"pool.source={source!r} is not valid; use demo or file")
        defaults = option_defaults("pool", option)
        if isinstance(data.get("filter"), dict):  # a partial filter node: the rest from the file
            data["filter"] = {**defaults.get("filter", {}), **data["filter"]}
        return parse(cls, data, owner=owner, defaults=defaults)


__all__ = ["PoolFilterSettings", "PoolSettings"]
