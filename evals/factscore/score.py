"""FActScore-NPM over a sample of responses: reasoning -> claims -> passages -> NPM support."""
from __future__ import annotations

from typing import Any, Sequence

from .claims import extract_claims, reasoning_text
from .metrics import factscore_metrics
from .npm import THRESHOLD

VERSION = "2"  # bump with the retriever, the NPM rule, the stopwords, the claim prompt or N
NAME = "FActScore-NPM (FTS5 article, FActScore BM25 passages)"


def score_responses(ids: Sequence[str], completions: Sequence[str], *, judge: Any, retriever: Any, npm: Any,
                    claims: str, threshold: float = THRESHOLD, demos: dict | None = None
                    ) -> tuple[list[dict], dict[str, dict], dict[str, int]]:
    """(per-response records, metrics entries, counts); see metrics.py for the quantities.
    `claims`: the extractor (claims.py), `demos`: FActScore's worked examples for `factscore`."""
    texts = [reasoning_text(c) for c in completions]
    found_claims = extract_claims(judge, texts, mode=claims, demos=demos)
    records = []
    for qid, text, found in zip(ids, texts, found_claims):
        record: dict[str, Any] = {"id": qid, "empty": not text.strip(), "failed": found is None, "facts": [],
                                  "skipped": 0, "no_article": 0}
        for claim in found or []:
            article, passages = retriever.passages(claim)
            record["no_article"] += article is None
            score = npm.score(claim, [p.text for p in passages])
            if score is None:  # no scorable token: skipped, counted (FActScore crashes here)
                record["skipped"] += 1
                continue
            record["facts"].append({"claim": claim, "article": article,
                                    "passages": [p.passage_id for p in passages], "score": score,
                                    "supported": score > threshold})
        records.append(record)
    metrics, counts = factscore_metrics(records)
    return records, metrics, counts
