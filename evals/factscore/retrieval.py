"""FActScore-NPM retrieval over an evidence store (PROTOCOL 6), RETRIEVER_VERSION 1.

For a claim: the top article by FTS5 BM25 over the whole store (title/text weights 5/1, OR
over up to 12 deduplicated non-stopwords, each quoted so FTS operators, hyphens and quotes
in the claim are plain words: `factrl.harness.evidence.fts`), then the top `k` (3) passages
of that article by BM25 for the same query. FActScore queries "topic + fact" within a known
topic's page; here the article itself is retrieved, so call the result "FActScore-style NPM
(FTS5 retriever)", not FActScore.
"""
from __future__ import annotations

import time
from typing import Any

RETRIEVER_VERSION = "1"
PASSAGES = 3  # PROTOCOL 6: top 3 passages of the top article


class ClaimRetriever:
    def __init__(self, store: Any, k: int = PASSAGES):
        self.store, self.k = store, int(k)
        self.stats = {"claims": 0, "no_article": 0, "seconds": 0.0}

    def article(self, claim: str) -> str | None:
        top = self.store.search(claim, 1)
        return top[0].title if top else None

    def passages(self, claim: str) -> tuple[str | None, list[Any]]:
        """(article title or None, its top-k passages for the claim)."""
        started = time.perf_counter()
        self.stats["claims"] += 1
        try:
            title = self.article(claim)
            if title is None:
                self.stats["no_article"] += 1
                return None, []
            return title, self.store.search(claim, self.k, titles=[title])
        finally:
            self.stats["seconds"] += time.perf_counter() - started

    def describe(self) -> dict[str, Any]:
        return {"name": "FTS5 BM25 top article, then its top passages", "version": RETRIEVER_VERSION,
                "passages": self.k, "store": self.store.describe()}
