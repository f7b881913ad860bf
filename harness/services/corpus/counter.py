"""The corpus counter: one interface over the backends, with validation and the cache.

    counter = open_counter(cfg.corpus)            # configs/corpus/*.yaml
    counter.count(["Paris", "France"])            # -> CountResult(count=..., ...)
    counter.count_many([[...], [...], ...])       # one call per training step

`count_many` validates every query, deduplicates within the batch, answers from the cache
first, sends only the rest to the backend and stores the successful counts (zero
included). A failed count is `CountResult(count=None, error=...)` and is never cached.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ...core.errors import ConfigError, HarnessError
from ...core.registry import get, require
from ...core.settings import plain
from . import layout
from .backends import ExactBackend, LocalBackend
from .cache import CountCache, params_key, query_key
from .formats import check_format
from .query import QUERY_VERSION, normalize_text, parse_query
from .remote import RemoteBackend
from .settings import SHIPPED, CorpusSettings
from .tokens import TermEncoder, identify, load_index_tokenizer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CountResult:
    count: int | None
    approx: bool = False
    error: str | None = None
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.count is not None and self.error is None


class Counter:
    """Counts word-level AND queries (lists of terms) on one index through one backend."""

    def __init__(self, backend, *, manifest_hash: str, cache: CountCache | None, min_terms: int = 2,
                 description: dict[str, Any] | None = None):
        self.backend = backend
        self.manifest_hash = manifest_hash
        self.cache = cache
        self.min_terms = min_terms
        self.description = description or {}
        self._params = params_key(backend.params())
        self._stats = {"queries": 0, "unique": 0, "cache_hits": 0, "backend_calls": 0, "refused": 0,
                       "failures": 0, "backend_seconds": 0.0}

    # -- validation ---------------------------------------------------------------------
    def _clauses(self, query: Any, min_clauses: int) -> tuple[tuple[tuple[str, ...], ...] | None, str | None]:
        if isinstance(query, str) or not isinstance(query, (list, tuple)):
            return None, f"a query is a list of term strings (or clauses), got {type(query).__name__}"
        clauses = []
        for item in query:
            alternatives = [item] if isinstance(item, str) else item
            if not isinstance(alternatives, (list, tuple)) or not alternatives:
                return None, "each clause is a term string or a non-empty list of term strings"
            clause = []
            for term in alternatives:
                if not isinstance(term, str):
                    return None, f"term {term!r} is not a string"
                term = normalize_text(term)
                if not term:
                    return None, "the query has an empty term"
                clause.append(term)
            clause_t = tuple(clause)
            if clause_t not in clauses:
                clauses.append(clause_t)
        if len(clauses) < min_clauses:
            what = "the query is empty" if not clauses else f"the query has {len(clauses)} distinct term(s)"
            return None, f"{what}; a co-occurrence count needs at least {min_clauses}"
        return tuple(clauses), None

    # -- counting -----------------------------------------------------------------------
    def count(self, terms: Sequence[str]) -> CountResult:
        """Count of one word-level AND (at least two distinct terms)."""
        return self.count_many([terms])[0]

    def count_cnf(self, clauses: Sequence[Sequence[str]] | str) -> CountResult:
        """Count of a general CNF (or its "A AND B OR C" text); one clause is allowed."""
        if isinstance(clauses, str):
            try:
                clauses = parse_query(clauses)
            except ValueError as err:
                return CountResult(None, error=str(err))
        return self.count_many([clauses], min_clauses=1)[0]

    def count_many(self, queries: Sequence[Sequence[str]], min_clauses: int | None = None) -> list[CountResult]:
        """Counts of many queries: validated, deduplicated, cache first, in input order."""
        need = self.min_terms if min_clauses is None else min_clauses
        results: list[CountResult | None] = [None] * len(queries)
        positions: dict[tuple[str, str], list[int]] = {}
        clauses_of: dict[tuple[str, str], tuple] = {}
        for i, query in enumerate(queries):
            clauses, error = self._clauses(query, need)
            if error:
                results[i] = CountResult(None, error=error)
                continue
            key = (query_key(clauses), self._params)
            positions.setdefault(key, []).append(i)
            clauses_of[key] = clauses
        hits = self.cache.get_many(positions) if self.cache is not None else {}
        fresh: dict[tuple[str, str], tuple[int, bool]] = {}
        calls, refused, backend_seconds = 0, 0, 0.0
        for key, where in positions.items():
            if key in hits:
                count, approx = hits[key]
                result = CountResult(count, approx, None, cached=True)
            else:
                started = time.perf_counter()
                outcome = self.backend.count(clauses_of[key])
                if getattr(outcome, "refused", False):  # failed fast (open circuit): no call reached the backend
                    refused += 1
                else:
                    backend_seconds += time.perf_counter() - started
                    calls += 1
                result = CountResult(outcome.count, outcome.approx, outcome.error, cached=False)
                if result.ok:
                    fresh[key] = (outcome.count, outcome.approx)
                else:
                    log.debug("count failed for %s: %s", key[0], outcome.error)
            for i in where:
                results[i] = result
        if self.cache is not None and fresh:
            self.cache.put_many(fresh)
        stats = self._stats
        stats["queries"] += len(queries)
        stats["unique"] += len(positions)
        stats["cache_hits"] += sum(len(positions[k]) for k in positions if k in hits)
        stats["backend_calls"] += calls
        stats["refused"] += refused
        stats["backend_seconds"] += backend_seconds
        stats["failures"] += sum(1 for r in results if r is not None and not r.ok)
        return results  # type: ignore[return-value]

    def stats(self) -> dict[str, float]:
        """Totals since opening: queries, unique, cache_hits, backend_calls, refused (failed
        fast without a backend call), failures (refused included), backend_seconds."""
        return dict(self._stats)

    def close(self) -> None:
        self.backend.close()
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> "Counter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _cache(settings: CorpusSettings, manifest_hash: str) -> CountCache | None:
    if not settings.cache:
        return None
    from ..models import writable_cache_dir

    path = settings.cache_path or (writable_cache_dir() / "corpus_counts.sqlite3")
    return CountCache(Path(str(path)).expanduser(), manifest_hash, QUERY_VERSION)


def _probe(info: layout.IndexInfo, encoder: TermEncoder, vocab_size: int, eos: int) -> None:
    """Open the index with the engine in a child process and count one word (about 0.2 s):
    damage the file checks missed crashes the child, not the caller."""
    from .probe import probe

    probe(info.engine_path, info.token_dtype, vocab_size, eos, list(encoder.encode("the") or []))


def open_counter(corpus_cfg: Any, tokenizer: Any = None) -> Counter:
    """A Counter for a corpus config node (configs/corpus/*.yaml; DictConfig, dict or
    `CorpusSettings`; absent keys from the option's file, harness/services/corpus/settings.py).

    `tokenizer`: the index tokenizer if the caller already loaded it; it must be the one the
    index was built with (checked by fingerprint). The backend is the registry's `corpus`
    entry of that name: (corpus settings, tokenizer) -> Counter; a plugin's backend, whose keys
    the shipped files do not know, gets its config node as given.
    """
    if isinstance(corpus_cfg, CorpusSettings):
        return get("corpus", require("corpus", corpus_cfg.backend, "corpus.backend"))(corpus_cfg, tokenizer)
    data = dict(plain(corpus_cfg) or {})
    name = require("corpus", str(data.get("backend") or CorpusSettings.default_values()["backend"]), "corpus.backend")
    if name not in SHIPPED:
        return get("corpus", name)(corpus_cfg, tokenizer)
    if tokenizer is not None and not data.get("tokenizer"):
        data["tokenizer"] = str(getattr(tokenizer, "name_or_path", "") or "")  # the given tokenizer's own name
    return get("corpus", name)(CorpusSettings.from_mapping(data), tokenizer)


def no_counter(settings: CorpusSettings, tokenizer: Any = None) -> Counter:
    """The registry's `corpus` entry `none`."""
    raise ConfigError("corpus=none has no counter; choose a corpus (corpus=demo, corpus=wikipedia, "
                      "corpus=remote) for a method that counts co-occurrences.")


def open_remote_counter(settings: CorpusSettings, tokenizer: Any = None) -> Counter:
    """The registry's `corpus` entry `remote`: the public infini-gram API (remote.py)."""
    try:
        backend = RemoteBackend(
            api_url=str(settings.api_url or ""), index=str(settings.index or ""),
            max_clause_freq=settings.max_clause_freq, max_diff_tokens=settings.max_diff_tokens,
            timeout_s=settings.timeout_s, max_retries=settings.max_retries, backoff_s=settings.backoff_s,
            min_interval_s=settings.min_interval_s, overflow=settings.overflow,
            breaker_failures=settings.breaker_failures, breaker_cooldown_s=settings.breaker_cooldown_s)
    except ValueError as err:
        raise ConfigError(f"corpus (remote): {err}.") from None
    if not backend.api_url.startswith(("http://", "https://")) or not backend.index or backend.index == "???":
        raise ConfigError("corpus.api_url must be an http(s) URL and corpus.index an API index name.")
    return Counter(backend, manifest_hash=backend.manifest_hash, cache=_cache(settings, backend.manifest_hash),
                   description={"backend": "remote", "index": backend.index, "api_url": backend.api_url})


def open_local_counter(settings: CorpusSettings, tokenizer: Any = None) -> Counter:
    """The registry's `corpus` entry `local`: an index on disk, infini-gram's engine (backends.py)."""
    return _open_index(settings, tokenizer, LocalBackend)


def open_exact_counter(settings: CorpusSettings, tokenizer: Any = None) -> Counter:
    """The registry's `corpus` entry `exact`: an index on disk, exact counts (backends.py)."""
    return _open_index(settings, tokenizer, ExactBackend)


def _open_index(settings: CorpusSettings, tokenizer: Any, cls: type) -> Counter:
    spec = str(settings.tokenizer or getattr(tokenizer, "name_or_path", ""))
    if tokenizer is None:
        tokenizer = load_index_tokenizer(spec)
    identity = identify(tokenizer, spec)
    index_dir = settings.index_dir
    if index_dir in (None, "") and settings.source == "demo":
        from .build import ensure_demo_index

        info = ensure_demo_index(tokenizer, identity)
    elif index_dir in (None, "", "???"):
        raise ConfigError("corpus.index_dir is not set: give the index directory (corpus.index_dir=/path).")
    else:
        info = layout.inspect_index(str(index_dir), settings.token_dtype)
    built_with = (info.manifest or {}).get("tokenizer") or {}
    if info.manifest is not None and built_with.get("fingerprint") != identity.fingerprint:
        raise HarnessError(
            f"index {info.path} was built with tokenizer '{built_with.get('spec')}' (vocabulary "
            f"{built_with.get('vocab_size')}), but tokenizer '{spec}' (vocabulary {identity.vocab_size}) was given; "
            f"set corpus.tokenizer={built_with.get('spec')} or rebuild the index with this tokenizer.")
    check_format(info.manifest, info.path, tokenizer)
    info.engine_path = layout.engine_path(info.path)
    max_id = (1 << (8 * info.width)) - 2  # the all-ones id is the document separator
    if identity.vocab_size - 1 > max_id:
        raise HarnessError(f"index {info.path} stores {info.token_dtype} ids, but tokenizer '{spec}' has "
                           f"{identity.vocab_size} ids; the index cannot have been built with it.")
    encoder = TermEncoder(tokenizer, max_id)
    if settings.probe:
        _probe(info, encoder, identity.vocab_size, identity.eos_token_id)
    backend = cls(info, encoder, vocab_size=identity.vocab_size, eos_token_id=identity.eos_token_id,
                  max_clause_freq=settings.max_clause_freq, max_diff_tokens=settings.max_diff_tokens,
                  case_variants=bool(settings.case_variants))
    description = {"backend": settings.backend, "index_dir": str(info.path), "token_dtype": info.token_dtype,
                   "documents": info.documents, "tokens": info.tokens, "tokenizer": identity.to_dict()}
    return Counter(backend, manifest_hash=info.manifest_hash, cache=_cache(settings, info.manifest_hash),
                   description=description)
