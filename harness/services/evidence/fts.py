"""User text as FTS5 MATCH expressions in which every word is a plain word.

A question can contain FTS5 syntax by accident: `AND`, `OR`, `NOT`, `NEAR`, `*`, `^`, `:`,
parentheses, hyphens (a leading `-` is column exclusion) and unbalanced quotes. Passed raw,
these change the query or make SQLite raise. The rule (QUERY_RULE_VERSION 1):

1. split the text into words the way FTS5's unicode61 tokenizer does: maximal runs of
   letters, digits and combining marks (NFC first); everything else separates, so
   "Jean-Paul" is two words and "NEAR(paris" is near + paris;
2. drop stopwords unless that leaves nothing: the corpus service's 35 function words, its
   one-word pronouns (what, which, who, that, his, ...), when/where/how/why, and
   one-letter words (the "s" of "Sartre's"); an all-capital word ("US", "WHO") is kept.
   They match most passages and make a query slow while adding little to BM25.
   Dedupe case-insensitively; keep the first `max_terms`;
3. wrap each word in double quotes, doubling any quote inside (none survive step 1, the
   doubling keeps `quote` safe on its own): inside a string FTS5 reads no operators, so
   `"NEAR"` is the word near;
4. join with OR for a ranked search (BM25 rewards passages that match more words) or with
   AND for a title lookup (every word of the title must be in the title column).
A change to this rule changes retrieval results: bump QUERY_RULE_VERSION.
"""
from __future__ import annotations

import unicodedata

from ..corpus.query import PRONOUNS, STOPWORDS

QUERY_RULE_VERSION = "1"
QUERY_STOPWORDS = frozenset(STOPWORDS | {p for p in PRONOUNS if " " not in p} | {"when", "where", "how", "why"})
MAX_TERMS = 12  # docs/PROTOCOL.md §6 (FActScore-NPM retrieval): OR over up to 12 non-stopwords


def quote(word: str) -> str:
    """One FTS5 string literal: the word's text, never an operator."""
    return '"' + word.replace('"', '""') + '"'


def _is_token_char(ch: str) -> bool:
    return ch.isalnum() or unicodedata.category(ch)[0] in ("L", "N", "M") or unicodedata.category(ch) == "Co"


def words(text: str) -> list[str]:
    """The words of `text` as FTS5's unicode61 tokenizer sees them (rule step 1)."""
    out, current = [], []
    for ch in unicodedata.normalize("NFC", str(text or "")):
        if _is_token_char(ch):
            current.append(ch)
        elif current:
            out.append("".join(current))
            current = []
    if current:
        out.append("".join(current))
    return out


def is_stopword(word: str) -> bool:
    if len(word) > 1 and word.isupper():
        return False
    return len(word) == 1 and word.isalpha() or word.lower() in QUERY_STOPWORDS


def query_terms(text: str, max_terms: int = MAX_TERMS, drop_stopwords: bool = True) -> list[str]:
    """The words of `text` that become terms, in order (rule steps 1-2)."""
    kept, seen = [], set()
    for word in words(text):
        key = word.lower()
        if key in seen or (drop_stopwords and is_stopword(word)):
            continue
        seen.add(key)
        kept.append(word)
    if not kept and drop_stopwords:  # a query of stopwords only ("The Who") keeps them
        return query_terms(text, max_terms, drop_stopwords=False)
    return kept[:max_terms]


def match_any(text: str, max_terms: int = MAX_TERMS) -> str | None:
    """An OR expression over the text's words, or None when it has none."""
    terms = query_terms(text, max_terms)
    return " OR ".join(quote(t) for t in terms) if terms else None


def match_title(title: str) -> str | None:
    """An AND expression over every word of a title, restricted to the title column."""
    terms = query_terms(title, max_terms=64, drop_stopwords=False)
    return "title : (" + " AND ".join(quote(t) for t in terms) + ")" if terms else None
