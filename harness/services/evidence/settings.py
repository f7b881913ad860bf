"""The `evidence` config group (configs/evidence/{demo,file}.yaml) as checked settings.

An absent key takes the value of the option's file: demo.yaml when `store` is null (the demo
store), else the node's `name` when it is a shipped option, else demo.yaml without a store and
file.yaml with one. A required
store left unset (`store: ???`) stays `"???"`, so `open_evidence` refuses it instead of falling
back to the demo store. `tokenizer` and `passage_tokens` belong to the demo store only (a built
store's manifest fixes them): None on evidence=file.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.settings import Settings, option_defaults, option_names, parse, plain


@dataclass(frozen=True)
class EvidenceSettings(Settings):
    """`evidence.*` (configs/evidence/*.yaml document each key)."""

    OWNER = "evidence"
    DEFAULTS = "evidence/demo.yaml"  # the root default; from_mapping picks the option's own file
    RANGES = {"k": "[1, inf)", "max_terms": "[1, inf)", "passage_tokens": "[1, inf)"}

    name: str
    store: str | None  # a store file from `harness evidence build`; None: the demo store
    k: int  # passages per article
    max_terms: int  # OR over up to this many non-stopwords of the query
    fuzzy_titles: bool  # an unmatched title takes the best BM25 title match
    tokenizer: str | None = None  # the demo store's passage tokenizer
    passage_tokens: int | None = None  # the demo store's passage size

    @classmethod
    def from_mapping(cls, mapping: Any = None, *, owner: str | None = None, **changes: Any) -> "EvidenceSettings":
        data = {**dict(plain(mapping) or {}), **changes}
        name = data.get("name")
        if data.get("store") is None and "store" in data:
            option = "demo"  # `store: null` is the demo store, whatever the option's name
        else:
            option = str(name) if name in option_names("evidence") else "demo" if data.get("store") is None else "file"
        return parse(cls, data, owner=owner, defaults=option_defaults("evidence", option))


__all__ = ["EvidenceSettings"]
