"""What counts as an answer and when it is correct: the one definition evaluation, the training
rewards and the reference judge share (docs/PROTOCOL.md §6).

It sits in the harness's foundation so that a reward or a judge can judge an answer exactly as
the evaluator does without importing the evaluator. Two parts:

- `matching`: extraction of the answer block, normalisation, refusal forms, the protocol's
  bidirectional closed-book matcher (the primary metric's rule);
- `strict`: strict accuracy v2, beside the protocol's matcher and never replacing it (one
  answer block, the gold asserted, not negated or retracted, not one of a list).

`SCORER_VERSION` versions every behaviour the default scorer decides: these helpers (whose
behaviour tests/evals/test_eval_version.py fingerprints) and the evaluator's task rules
(factrl.evals.rules). It lives here, beside the helpers it pins, so that the reference judge can
record it without importing the evaluator; evals/scorers/default.py re-exports it. Bump it, with a
dated line in evals/README.md's changelog, whenever extraction, normalisation, stopwords, the
refusal list, matching or a task rule changes.
"""
from __future__ import annotations

from .matching import (ARTICLES, REFUSALS, STOPWORDS, Extraction, answer_blocks, extract_answer, has_content,
                       is_refusal, match_closed_book, match_prepared, normalize_answer, prepare_references)
from .strict import GAMING_REASONS, STRICT_VERSION, StrictVerdict, single_block, strict_correct


SCORER_VERSION = "1.1"

__all__ = ["ARTICLES", "GAMING_REASONS", "REFUSALS", "SCORER_VERSION", "STOPWORDS", "STRICT_VERSION", "Extraction", "StrictVerdict",
           "answer_blocks", "extract_answer", "has_content", "is_refusal", "match_closed_book", "match_prepared",
           "normalize_answer", "prepare_references", "single_block", "strict_correct"]
