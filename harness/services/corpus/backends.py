"""Counting backends over a local index: the infini-gram engine, and an exact counter.

A backend takes a query as CNF clauses of terms (strings; one term per clause for the
CorVer word-level AND) and returns an `Outcome`. It never raises for a bad query: a
failure is an Outcome with `error` set, which the counter records and never caches.

`local` is the engine as the CorVer authors used it (`count_cnf` with max_clause_freq and
max_diff_tokens passed explicitly). The engine anchors on the rarest clause and drops any
match whose window, widened to the nearest occurrence of each other clause on either
side, crosses a document separator: on short documents it undercounts (docs/PROTOCOL.md §2).

`exact` counts true co-occurrences on the same index, for analysis: the number of
occurrences of the rarest clause that have an occurrence of every other clause in the same
document within `max_diff_tokens` tokens (start to start, either side). No subsampling.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import layout
from .build import read_pointers
from .tokens import TermEncoder

Clauses = tuple[tuple[str, ...], ...]

# Bounds that keep a pathological query (a whole paragraph as an "entity") from costing
# seconds or threads: the engine starts a thread per clause and per alternative.
MAX_CLAUSES = 32
MAX_ALTERNATIVES = 8
MAX_TERM_TOKENS = 256


@dataclass(frozen=True)
class Outcome:
    count: int | None
    approx: bool = False
    error: str | None = None
    refused: bool = False  # answered without calling the backend (an open circuit): not a backend call


def case_variants(term: str) -> list[str]:
    """The term, then its lower-case and capitalised forms when they differ."""
    out = [term]
    for form in (term.lower(), term[:1].upper() + term[1:]):
        if form not in out:
            out.append(form)
    return out


class EngineBackend:
    """Shared by `local` and `exact`: term encoding and query validation."""

    name = "engine"

    def __init__(self, info: layout.IndexInfo, encoder: TermEncoder, *, vocab_size: int, eos_token_id: int,
                 max_clause_freq: int, max_diff_tokens: int, case_variants: bool):
        from infini_gram.engine import InfiniGramEngine

        if not (isinstance(max_clause_freq, int) and max_clause_freq > 0
                and isinstance(max_diff_tokens, int) and max_diff_tokens > 0):
            raise ValueError("max_clause_freq and max_diff_tokens must be positive integers")
        self.info = info
        self.encoder = encoder
        self.max_clause_freq = max_clause_freq
        self.max_diff_tokens = max_diff_tokens
        self.case_variants = case_variants
        # All checks on the files are done (layout.inspect_index) before this line.
        self.engine = InfiniGramEngine(
            index_dir=info.engine_path, eos_token_id=int(eos_token_id), vocab_size=int(vocab_size), version=4,
            token_dtype=info.token_dtype, max_clause_freq=max_clause_freq, max_diff_tokens=max_diff_tokens)

    def params(self) -> dict[str, Any]:
        """What, besides the index and the query, decides a count (part of the cache key)."""
        return {"backend": self.name, "max_clause_freq": self.max_clause_freq,
                "max_diff_tokens": self.max_diff_tokens, "case_variants": self.case_variants}

    def encode(self, clauses: Clauses) -> tuple[list[list[list[int]]] | None, str | None]:
        """(cnf of token ids, None), (None, None) when a clause cannot match (count 0),
        or (None, error) when the query is too large to send."""
        if len(clauses) > MAX_CLAUSES:
            return None, f"query has {len(clauses)} clauses; the limit is {MAX_CLAUSES}"
        cnf = []
        for clause in clauses:
            forms = [f for term in clause for f in (case_variants(term) if self.case_variants else [term])]
            alternatives: list[list[int]] = []
            for form in forms:
                ids = self.encoder.encode(form)
                if ids is None:
                    continue  # cannot occur in the index (unknown or special tokens)
                if len(ids) > MAX_TERM_TOKENS:
                    return None, f"term {form[:40]!r}... has {len(ids)} tokens; the limit is {MAX_TERM_TOKENS}"
                if list(ids) not in alternatives:
                    alternatives.append(list(ids))
            if len(alternatives) > MAX_ALTERNATIVES:
                return None, f"a clause has {len(alternatives)} alternatives; the limit is {MAX_ALTERNATIVES}"
            if not alternatives:
                return None, None
            cnf.append(alternatives)
        return cnf, None

    def count(self, clauses: Clauses) -> Outcome:
        cnf, error = self.encode(clauses)
        if error:
            return Outcome(None, error=error)
        if cnf is None:
            return Outcome(0)
        try:
            return self._count(cnf)
        except Exception as err:  # noqa: BLE001 - surfaced as a failure, never as a zero
            return Outcome(None, error=f"{type(err).__name__}: {err}")

    def _count(self, cnf: list[list[list[int]]]) -> Outcome:
        raise NotImplementedError

    def close(self) -> None:
        self.engine = None


class LocalBackend(EngineBackend):
    """The infini-gram engine on a memory-mapped local index (the default)."""

    name = "local"

    def _count(self, cnf):
        if len(cnf) == 1 and len(cnf[0]) == 1:
            result = self.engine.count(cnf[0][0])
        else:
            result = self.engine.count_cnf(cnf, max_clause_freq=self.max_clause_freq,
                                           max_diff_tokens=self.max_diff_tokens)
        if "error" in result:
            return Outcome(None, error=f"engine: {result['error']}")
        return Outcome(int(result["count"]), bool(result.get("approx", False)))


class ExactBackend(EngineBackend):
    """True co-occurrence counts on the same index (see the module docstring)."""

    name = "exact"
    # A clause more frequent than this is refused: the exact count reads every pointer.
    MAX_POSITIONS = 20_000_000

    def __init__(self, info: layout.IndexInfo, encoder: TermEncoder, **kwargs):
        super().__init__(info, encoder, **kwargs)
        self.tables = [np.memmap(s.table, dtype=np.uint8, mode="r") for s in info.shards]
        self.offsets = [np.array(np.memmap(s.offset, dtype="<u8", mode="r")) for s in info.shards]

    def _positions(self, clause: list[list[int]]) -> list[np.ndarray]:
        """Sorted byte positions of any alternative of the clause, per shard."""
        per_shard: list[list[np.ndarray]] = [[] for _ in self.info.shards]
        for ids in clause:
            found = self.engine.find(ids)
            if "error" in found:
                raise RuntimeError(f"engine: {found['error']}")
            for s, (start, end) in enumerate(found["segment_by_shard"]):
                if end > start:
                    per_shard[s].append(read_pointers(self.tables[s], self.info.shards[s].ptr_bytes, start, end))
        return [np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.uint64) for parts in per_shard]

    def _count(self, cnf):
        positions = [self._positions(clause) for clause in cnf]
        totals = [sum(len(p) for p in shards) for shards in positions]
        if max(totals) > self.MAX_POSITIONS:
            return Outcome(None, error=f"a clause occurs {max(totals)} times; the exact counter's limit is "
                                       f"{self.MAX_POSITIONS}")
        if min(totals) == 0:
            return Outcome(0)
        anchor = int(np.argmin(totals))
        window = self.max_diff_tokens * self.info.width
        count = 0
        for s, offsets in enumerate(self.offsets):
            points = positions[anchor][s].astype(np.int64)
            if not len(points):
                continue
            docs = np.searchsorted(offsets, points, side="right")
            keep = np.ones(len(points), dtype=bool)
            for c, shards in enumerate(positions):
                if c == anchor:
                    continue
                other = shards[s].astype(np.int64)
                if not len(other):
                    keep[:] = False
                    break
                other_docs = np.searchsorted(offsets, other, side="right")
                right = np.searchsorted(other, points, side="left")
                left = right - 1
                r = np.minimum(right, len(other) - 1)
                near_right = (right < len(other)) & (other_docs[r] == docs) & (other[r] - points <= window)
                l = np.maximum(left, 0)
                near_left = (left >= 0) & (other_docs[l] == docs) & (points - other[l] <= window)
                keep &= near_left | near_right
            count += int(np.count_nonzero(keep))
        return Outcome(count)

    def close(self) -> None:
        self.tables = []
        super().close()

