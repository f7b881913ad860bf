"""Retrieval from an evidence store: by title, by BM25 query, and per pool row.

Scores: `Passage.score` is minus SQLite's bm25() (higher is better, always > 0 for a BM25
match); 0.0 marks a passage returned without ranking (an exact-title lookup, or the fill
that completes a row's top k from its articles in document order).

Title resolution (RETRIEVAL_VERSION 1), per title: exact match; then case-insensitive, with
Wikipedia's underscores read as spaces; then the best BM25 match of all its words in the
title column (`fuzzy_titles=False` skips this step; each use counts as `titles_fuzzy`).
Results are memoised per store object.
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ...core.errors import DataError
from . import fts
from .schema import BUILD_HINT, connect_readonly, read_manifest

RETRIEVAL_VERSION = "1"
BM25_WEIGHTS = (5.0, 1.0)  # title, text: docs/PROTOCOL.md §6 (FActScore-NPM retrieval uses 5/1)
TITLE_SEPARATOR = ";"  # docs/BASELINES.md §1.4: the pool's `title` holds ;-joined Wikipedia titles


@dataclass(frozen=True)
class Passage:
    passage_id: int
    title: str
    text: str
    score: float


def split_titles(value: Any) -> list[str]:
    """A pool row's titles: a `;`-joined string (or a list), stripped, empties dropped."""
    if isinstance(value, (list, tuple)):
        parts = [str(v) for v in value]
    else:
        parts = str(value or "").split(TITLE_SEPARATOR)
    return [p.strip() for p in parts if p.strip()]


class EvidenceStore:
    """One open store (read-only). Safe to share between threads; a forked child reopens."""

    def __init__(self, path: Path, max_terms: int = fts.MAX_TERMS, fuzzy_titles: bool | None = None):
        from .settings import EvidenceSettings

        defaults = EvidenceSettings.from_mapping()  # evidence.* of configs/evidence/demo.yaml
        self.path = Path(path).resolve()
        self.manifest = read_manifest(self.path)
        self.max_terms = max_terms
        self.fuzzy_titles = defaults.fuzzy_titles if fuzzy_titles is None else fuzzy_titles
        self.k = defaults.k  # passages per query when a caller gives no k (evidence.k)
        self._lock = threading.Lock()
        self._conn_pid: tuple[sqlite3.Connection, int] | None = None
        self._titles: dict[str, str | None] = {}
        self._stats = {"queries": 0, "rows": 0, "no_title": 0, "rows_title_missing": 0, "titles_fuzzy": 0,
                       "titles_unresolved": 0, "empty_queries": 0, "seconds": 0.0}
        if self._rows("SELECT 1 FROM passages LIMIT 1") == []:
            raise DataError(f"evidence store {self.path} has no passages; rebuild it with {BUILD_HINT} --force.")

    # -- plumbing ---------------------------------------------------------------------
    @property
    def manifest_hash(self) -> str:
        return self.manifest.manifest_hash

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[tuple]:
        with self._lock:
            if self._conn_pid is None or self._conn_pid[1] != os.getpid():
                self._conn_pid = (connect_readonly(self.path), os.getpid())
            return self._conn_pid[0].execute(sql, tuple(params)).fetchall()

    def close(self) -> None:
        with self._lock:
            if self._conn_pid is not None and self._conn_pid[1] == os.getpid():
                self._conn_pid[0].close()
            self._conn_pid = None

    def __enter__(self) -> "EvidenceStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- titles -----------------------------------------------------------------------
    def resolve_title(self, title: str) -> str | None:
        """The store's title for `title` (see the module docstring), or None."""
        if title in self._titles:
            return self._titles[title]
        found = self._rows("SELECT title FROM passages WHERE title = ? LIMIT 1", (title,))
        if not found:
            spaced = title.replace("_", " ")
            found = self._rows("SELECT title FROM passages WHERE title = ? COLLATE NOCASE ORDER BY passage_id "
                               "LIMIT 1", (spaced,))
        if not found:
            expr = fts.match_title(title) if self.fuzzy_titles else None
            if expr:
                found = self._rows("SELECT title FROM passages_fts WHERE passages_fts MATCH ? "
                                   "ORDER BY bm25(passages_fts, 1.0, 0.0) LIMIT 1", (expr,))
                self._stats["titles_fuzzy"] += bool(found)
        resolved = found[0][0] if found else None
        self._stats["titles_unresolved"] += resolved is None
        self._titles[title] = resolved
        return resolved

    def _article(self, title: str) -> list[Passage]:
        return [Passage(pid, t, text, 0.0) for pid, t, text in self._rows(
            "SELECT passage_id, title, text FROM passages WHERE title = ? ORDER BY doc_index, chunk", (title,))]

    def by_title(self, titles: list[str] | str, k: int | None = None) -> list[Passage]:
        """Up to k passages of the given articles in document order, taken round-robin
        across titles (each title's lead passage first). k: None is evidence.k."""
        k = self.k if k is None else k
        resolved = [t for t in dict.fromkeys(self.resolve_title(t) for t in split_titles(titles)) if t]
        articles = [self._article(t) for t in resolved]
        out: list[Passage] = []
        for depth in range(max((len(a) for a in articles), default=0)):
            out += [a[depth] for a in articles if depth < len(a)]
        return out[:k]

    # -- ranked search ----------------------------------------------------------------
    def search(self, query: str, k: int | None = None, *, titles: list[str] | str | None = None) -> list[Passage]:
        """The k best passages by BM25 (title weight 5, text 1) for the words of `query`
        (quoted: FTS operators in it are plain words). With `titles`, only passages of
        those articles compete; unknown titles are dropped, and none known gives []. k: None is evidence.k."""
        k = self.k if k is None else k
        started = time.perf_counter()
        self._stats["queries"] += 1
        try:
            expr = fts.match_any(query, self.max_terms)
            if expr is None:
                self._stats["empty_queries"] += 1
                return []
            # Rank rowids first and fetch the text of the k winners only: joining before the
            # sort reads every matching passage (measured 2.1 -> 1.3 ms median on the demo).
            inner = "SELECT rowid AS id, bm25(passages_fts, ?, ?) AS s FROM passages_fts WHERE passages_fts MATCH ?"
            params: list[Any] = [*BM25_WEIGHTS, expr]
            if titles is not None:
                wanted = [t for t in dict.fromkeys(self.resolve_title(t) for t in split_titles(titles)) if t]
                if not wanted:
                    return []
                inner += (f" AND rowid IN (SELECT passage_id FROM passages WHERE title IN "
                          f"({', '.join('?' * len(wanted))}))")
                params += wanted
            sql = (f"SELECT p.passage_id, p.title, p.text, m.s FROM ({inner} ORDER BY s LIMIT ?) m "
                   f"JOIN passages p ON p.passage_id = m.id ORDER BY m.s, p.passage_id")
            rows = self._rows(sql, [*params, int(k)])
            return [Passage(pid, title, text, -score) for pid, title, text, score in rows]
        finally:
            self._stats["seconds"] += time.perf_counter() - started

    def for_row(self, row: dict[str, Any], query: str, k: int | None = None) -> list[Passage]:
        """Evidence for one pool row: its `;`-joined `title` selects the articles, `query`
        ranks their passages by BM25, and the articles' other passages (document order)
        fill the list up to k. A row without a title returns [] and counts as
        `no_title`; one whose titles are all unknown returns [] and counts as
        `rows_title_missing`. The method decides what an empty list means. k: None is evidence.k."""
        k = self.k if k is None else k
        self._stats["rows"] += 1
        titles = split_titles(row.get("title") if isinstance(row, dict) else None)
        if not titles:
            self._stats["no_title"] += 1
            return []
        resolved = [t for t in dict.fromkeys(self.resolve_title(t) for t in titles) if t]
        if not resolved:
            self._stats["rows_title_missing"] += 1
            return []
        ranked = self.search(query, k, titles=resolved)
        seen = {p.passage_id for p in ranked}
        if len(ranked) < k:
            ranked += [p for p in self.by_title(resolved, k=1 << 30) if p.passage_id not in seen][: k - len(ranked)]
        return ranked

    # -- provenance -------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        out = dict(self._stats)
        out["seconds"] = round(out["seconds"], 6)
        return out

    def describe(self) -> dict[str, Any]:
        """A component entry (docs/CONTRACTS.md, "Provenance of reward components")."""
        data = self.manifest.data
        demo = data["source"]["kind"] == "demo"
        entry = {"kind": "evidence", "backend": "sqlite-fts5", "model": None, "revision": None, "stand_in": demo,
                 "label": "demo Wikipedia lead sections" if demo else "Wikipedia evidence store",
                 "manifest_hash": self.manifest_hash, "path": str(self.path),
                 "source": {k: data["source"].get(k) for k in ("kind", "sha256", "asset")},
                 "tokenizer": data["tokenizer"].get("spec"), "passage_tokens": data["passage_tokens"],
                 "counts": data["counts"], "retrieval_version": RETRIEVAL_VERSION,
                 "query_rule_version": fts.QUERY_RULE_VERSION, "bm25_weights": list(BM25_WEIGHTS),
                 "max_terms": self.max_terms, "fuzzy_titles": self.fuzzy_titles}
        if demo:
            entry["note"] = ("10k Wikipedia lead sections, not the per-question Wikipedia pages of the released "
                             "pool; rows whose titles are absent get no evidence")
        return entry


def open_store(path: str | os.PathLike, *, max_terms: int = fts.MAX_TERMS, fuzzy_titles: bool | None = None
               ) -> EvidenceStore:
    """Open an evidence store; DataError naming the path and the build command when it is
    missing, empty, foreign or of another format."""
    if path is None or str(path).strip() in ("", "???"):
        raise DataError(f"evidence.store is not set; give a store file from {BUILD_HINT}, or null for the demo store.")
    return EvidenceStore(Path(os.path.expanduser(str(path))), max_terms=max_terms, fuzzy_titles=fuzzy_titles)


def open_evidence(cfg: Any) -> EvidenceStore:
    """The store a configs/evidence node (or its parsed `EvidenceSettings`) names: `store: null`
    means the demo store."""
    from .settings import EvidenceSettings

    # Parsed from plain data, which keeps a required `???` as text: DictConfig.get would read it as
    # None, and a missing store would silently become the demo store.
    settings = cfg if isinstance(cfg, EvidenceSettings) else EvidenceSettings.from_mapping(cfg)
    store = settings.store
    if store is None:
        from .build import ensure_demo_store

        store = ensure_demo_store(settings.tokenizer, settings.passage_tokens)
    return open_store(store, max_terms=settings.max_terms, fuzzy_titles=settings.fuzzy_titles)
