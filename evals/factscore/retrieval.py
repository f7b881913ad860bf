"""FActScore-NPM retrieval over an evidence store (docs/PROTOCOL.md §6), RETRIEVER_VERSION 2.

For a claim, as the CorVer paper ran it (§A.2, "Reasoning-trace factuality evaluation"):
1. the top article: SQLite FTS5 BM25 over the whole store (title/text weights 5/1, OR over up
   to 12 deduplicated non-stopwords, each quoted so FTS operators, hyphens and quotes in the
   claim are plain words: `factrl.harness.services.evidence.fts`). This is CorVer's QA-oriented
   adaptation: FActScore itself is given the topic (a person's name) and never searches;
2. that article's passages ranked as FActScore ranks a topic's passages (shmsw25/FActScore
   @f28272d factscore/retrieval.py:165-174, 193-207): `BM25Okapi` (rank-bm25; k1 1.5, b 0.75,
   epsilon 0.25) over each passage's text with `<s>`/`</s>` removed and split on whitespace
   (case and punctuation kept), the query `topic + " " + claim.strip()` split the same way,
   the top `k` (3) by `argsort(-scores)`. An article with fewer than k passages returns all
   of them, as FActScore does. The BM25 index is built once per article (memoised).
"""
from __future__ import annotations

import dataclasses
import time
from collections import OrderedDict
from typing import Any, Sequence

RETRIEVER_VERSION = "2"  # 2: passages within the article by BM25Okapi on "topic + claim" (was FTS5 over the claim)
PASSAGES = 3  # docs/PROTOCOL.md §6 / npm.py:94: top 3 passages of the top article


def _words(text: str) -> list[str]:
    return text.replace("<s>", "").replace("</s>", "").split()


def bm25_index(texts: Sequence[str]) -> Any:
    from rank_bm25 import BM25Okapi

    return BM25Okapi([_words(t) for t in texts])


def rank_passages(topic: str, claim: str, texts: Sequence[str], k: int = PASSAGES, *,
                  index: Any = None) -> tuple[list[int], list[float]]:
    """(indexes of the top-k texts, BM25 score of every text) for `topic + " " + claim`."""
    import numpy as np

    if not texts:
        return [], []
    index = index if index is not None else bm25_index(texts)
    scores = index.get_scores((topic + " " + claim.strip()).split())
    order = np.argsort(-scores)[:k]  # FActScore's tie order (numpy's default sort)
    return [int(i) for i in order], [float(s) for s in scores]


class ClaimRetriever:
    def __init__(self, store: Any, k: int = PASSAGES, cache_size: int = 256):
        self.store, self.k = store, int(k)
        self._indexes: OrderedDict[str, tuple[list[Any], Any]] = OrderedDict()
        self._cache_size = cache_size
        self.stats = {"claims": 0, "no_article": 0, "seconds": 0.0}

    def article(self, claim: str) -> str | None:
        top = self.store.search(claim, 1)
        return top[0].title if top else None

    def _article_index(self, title: str) -> tuple[list[Any], Any]:
        if title in self._indexes:
            self._indexes.move_to_end(title)
            return self._indexes[title]
        passages = self.store.by_title(title, k=1 << 30)
        entry = (passages, bm25_index([p.text for p in passages]) if passages else None)
        self._indexes[title] = entry
        if len(self._indexes) > self._cache_size:
            self._indexes.popitem(last=False)
        return entry

    def passages(self, claim: str) -> tuple[str | None, list[Any]]:
        """(article title or None, its top-k passages for the claim, best first)."""
        started = time.perf_counter()
        self.stats["claims"] += 1
        try:
            title = self.article(claim)
            if title is None:
                self.stats["no_article"] += 1
                return None, []
            passages, index = self._article_index(title)
            order, scores = rank_passages(title, claim, [p.text for p in passages], self.k, index=index)
            return title, [dataclasses.replace(passages[i], score=scores[i]) for i in order]
        finally:
            self.stats["seconds"] += time.perf_counter() - started

    def describe(self) -> dict[str, Any]:
        return {"name": "FTS5 BM25 top article, then its passages by BM25Okapi (FActScore)",
                "version": RETRIEVER_VERSION, "passages": self.k, "article_query": "claim (FTS5, OR, <= 12 words)",
                "passage_query": "title + ' ' + claim (whitespace tokens)", "store": self.store.describe()}
