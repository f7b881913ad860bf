"""Corpus co-occurrence service: infini-gram indexes built offline, counted and cached.

Public API (docs/CONTRACTS.md, "Corpus API"):
- query construction: `content_words`, `build_query`, `is_pronoun`, `STOPWORDS`, `PRONOUNS`,
  `QUERY_VERSION`;
- counting: `open_counter(corpus_cfg, tokenizer=None) -> Counter` with `count(terms)`,
  `count_many(list_of_term_lists)`, `count_cnf(clauses_or_text)`, `stats()`,
  `manifest_hash`, `close()`; results are `CountResult(count, approx, error, cached)`;
- indexes: `build_index`, `ensure_demo_index`, `inspect_index`.
Importing this package loads neither transformers nor the engine; `open_counter` does.
"""
from .build import build_index, ensure_demo_index
from .counter import Counter, CountResult, open_counter
from .layout import inspect_index
from .query import (PRONOUNS, PRONOUNS_VERSION, QUERY_VERSION, STOPWORDS, build_query, content_words,
                    format_query, is_pronoun, parse_query)


__all__ = [
    "PRONOUNS", "PRONOUNS_VERSION", "QUERY_VERSION", "STOPWORDS", "Counter", "CountResult", "build_index",
    "build_query", "content_words", "ensure_demo_index", "format_query", "inspect_index", "is_pronoun",
    "open_counter", "parse_query",
]
