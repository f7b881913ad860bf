"""The `corpus` config group (configs/corpus/{demo,wikipedia,remote,none}.yaml) as checked settings.

An absent key takes the value of the option's own file: the node's `name` when it is a shipped
option, else the file of its backend (remote: remote.yaml, none: none.yaml, local and exact:
demo.yaml), so `open_counter({"backend": "remote", ...})` behaves as `corpus=remote` does (at
most one request per `min_interval_s` = 2.0 s, the reference client's value). Keys of one backend
only are None on the others.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.errors import SettingError
from ...core.registry import require
from ...core.settings import Settings, option_defaults, option_names, parse, plain

# The backends whose keys the shipped option files define (a plugin's registered backend reads its own node).
SHIPPED = ("local", "exact", "remote", "none")
OVERFLOW = ("fail", "truncate")
TOKEN_DTYPES = ("u8", "u16", "u32")
_BACKEND_FILE = {"local": "demo", "exact": "demo", "remote": "remote", "none": "none"}


@dataclass(frozen=True)
class CorpusSettings(Settings):
    """`corpus.*` (configs/corpus/*.yaml document each key)."""

    OWNER = "corpus"
    DEFAULTS = "corpus/demo.yaml"  # the root default; from_mapping picks the option's own file
    RANGES = {"max_clause_freq": "[1, inf)", "max_diff_tokens": "[1, inf)", "timeout_s": "(0, inf)",
              "max_retries": "[0, inf)", "backoff_s": "[0, inf)", "min_interval_s": "[0, inf)",
              "breaker_failures": "[0, inf)", "breaker_cooldown_s": "[0, inf)"}

    name: str
    backend: str  # local | exact | remote | none
    # every counting backend
    max_clause_freq: int | None = None
    max_diff_tokens: int | None = None
    cache: bool | None = None  # persistent SQLite count cache
    cache_path: str | None = None  # None: <harness cache>/corpus_counts.sqlite3
    # local and exact: an index on disk
    source: str | None = None  # demo: `index_dir: null` builds or reuses the demo index | path
    index_dir: str | None = None
    tokenizer: str | None = None
    token_dtype: str | None = None  # only for an index without a harness manifest
    case_variants: bool | None = None
    probe: bool | None = None  # open the index in a child process first
    # remote: the public infini-gram API
    api_url: str | None = None
    index: str | None = None
    timeout_s: float | None = None
    max_retries: int | None = None
    backoff_s: float | None = None
    min_interval_s: float | None = None
    overflow: str | None = None  # fail | truncate
    breaker_failures: int | None = None
    breaker_cooldown_s: float | None = None

    def __post_init__(self) -> None:
        if self.backend not in SHIPPED:
            raise ValueError(f"backend={self.backend!r}: CorpusSettings holds the shipped backends' keys "
                             f"({', '.join(SHIPPED)}); a plugin's backend reads its own node")
        if self.overflow is not None and self.overflow not in OVERFLOW:
            raise ValueError(f"overflow={self.overflow!r}: use fail or truncate")
        if self.token_dtype is not None and self.token_dtype not in TOKEN_DTYPES:
            raise ValueError(f"token_dtype={self.token_dtype!r}: use {', '.join(TOKEN_DTYPES)} or null (the manifest "
                             f"decides)")
        if self.source is not None and self.source not in ("demo", "path"):
            raise ValueError(f"source={self.source!r}: use demo (the demo index) or path (corpus.index_dir)")

    @classmethod
    def from_mapping(cls, mapping: Any = None, *, owner: str | None = None, **changes: Any) -> "CorpusSettings":
        data = {**dict(plain(mapping) or {}), **changes}
        backend = require("corpus", str(data.get("backend") or cls.default_values()["backend"]), "corpus.backend")
        if backend not in SHIPPED:
            raise SettingError(f"corpus.backend={backend!r}: a plugin's backend; it reads its own node "
                               f"(CorpusSettings holds the keys of {', '.join(SHIPPED)})")
        return parse(cls, data, owner=owner, defaults=defaults_for(data.get("name"), backend))

    @property
    def counts(self) -> bool:
        """Whether this corpus counts co-occurrences (corpus=none does not)."""
        return self.backend != "none"


def defaults_for(name: Any, backend: str) -> dict[str, Any]:
    """The values of corpus=<name> when it is a shipped option of the same backend, else those
    of the backend's file (module docstring)."""
    if name in option_names("corpus"):
        shipped = option_defaults("corpus", str(name))
        if shipped.get("backend") == backend or (backend in ("local", "exact")
                                                 and shipped.get("backend") in ("local", "exact")):
            return {**shipped, "backend": backend}
    return {**option_defaults("corpus", _BACKEND_FILE[backend]), "backend": backend}


__all__ = ["CorpusSettings", "SHIPPED", "defaults_for"]
