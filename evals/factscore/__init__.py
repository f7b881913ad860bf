"""FActScore-NPM on reasoning traces (docs/PROTOCOL.md §6, docs/BASELINES.md §7): claims from the reasoning
(claims.py), the top article by FTS5 and its top 3 passages by FActScore's BM25Okapi (retrieval.py), support by a
nonparametric masked LM (npm.py, loaded by masked_lm.py), the reported quantities (metrics.py),
the whole pass over a sample (score.py). See evals/README.md, "Judged evaluations"."""
from .claims import dedupe, extract_claims, reasoning_text
from .masked_lm import PAPER_MODEL, build_standin, load_npm
from .metrics import factscore_metrics
from .npm import THRESHOLD, NPMScorer, stopword_ids
from .retrieval import RETRIEVER_VERSION, ClaimRetriever
from .score import NAME, VERSION, score_responses

__all__ = ["NAME", "PAPER_MODEL", "RETRIEVER_VERSION", "THRESHOLD", "VERSION", "ClaimRetriever", "NPMScorer",
           "build_standin", "dedupe", "extract_claims", "factscore_metrics", "load_npm", "reasoning_text",
           "score_responses", "stopword_ids"]
