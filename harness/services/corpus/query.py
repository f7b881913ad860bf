"""Query construction for the CorVer sentence reward (docs/PROTOCOL.md §2).

A (head, tail) pair becomes a word-level AND: the content words of the head, then of the
tail, deduplicated case-insensitively, one term per CNF clause. The rules, in order, for
one entity string:

1. split on whitespace and commas (the reference splits on both), trim quotes, brackets
   and sentence punctuation around each word (see `_trim`), drop words that were only
   punctuation;
2. keep the capitalised words longer than one character that are not stopwords;
3. if there are none, keep the non-stopwords longer than two characters;
4. if there are none, the stripped entity string itself is the single term.

Anything that changes the terms a pair produces, or how a term becomes token ids
(tokens.TermEncoder), changes `QUERY_VERSION`; the count cache keys on it, so old counts
are never mixed with new queries.

Changelog
- 1 (2026-05): first version. Word lists and fallbacks as docs/PROTOCOL.md §2; punctuation around
  words is trimmed (the reference keeps it, which makes "Clarke." a two-token n-gram that
  rarely matches); Unicode is NFC-normalised.
"""
from __future__ import annotations

import re
import unicodedata

QUERY_VERSION = "1"

# Function words dropped from entity strings. The list keeps the coverage of the CorVer
# reference implementation (articles, common prepositions, coordinators, forms of be /
# have / do, negation, "it"/"its"), because the reward thresholds were calibrated on
# queries built with it; a longer list would change which words a query keeps.
STOPWORDS: frozenset[str] = frozenset(
    # articles
    ["a", "an", "the"]
    # prepositions
    + ["at", "by", "for", "from", "in", "of", "on", "to", "with"]
    # coordinators and subordinators
    + ["and", "as", "but", "if", "or", "so"]
    # auxiliaries
    + ["are", "be", "been", "being", "is", "was", "were"]
    + ["did", "do", "does", "had", "has", "have"]
    # negation and pronoun forms the reference also drops
    + ["no", "not", "it", "its"]
)

# Entity strings that are pronouns (docs/PROTOCOL.md §2: personal, possessive, reflexive,
# demonstrative, relative and indefinite pronouns) do not name anything a corpus can
# confirm, so a triple with such a head or tail is invalid. Compared against the whole
# entity, lower-cased and stripped. The CorVer reward imports this list.
PRONOUNS: frozenset[str] = frozenset(
    # personal
    ["i", "me", "you", "he", "him", "she", "her", "it", "we", "us", "they", "them"]
    # possessive
    + ["my", "mine", "your", "yours", "his", "hers", "its", "our", "ours", "their", "theirs"]
    # reflexive
    + ["myself", "yourself", "himself", "herself", "itself", "oneself", "ourselves",
       "yourselves", "themselves"]
    # demonstrative
    + ["this", "that", "these", "those"]
    # relative and interrogative
    + ["who", "whom", "whose", "which", "what", "whoever", "whomever", "whatever", "whichever"]
    # indefinite
    + ["someone", "somebody", "something", "anyone", "anybody", "anything", "everyone",
       "everybody", "everything", "no one", "nobody", "nothing", "none", "each other",
       "one another"]
    # locative pro-forms the reference also rejects as entities
    + ["here", "there"]
)
PRONOUNS_VERSION = "1"

# Characters trimmed from both ends of a word. Hyphens, apostrophes and periods inside a
# word stay ("Jean-Paul", "O'Brien", "U.S.").
_OPENERS = "\"'“”‘’«»„‹›([{<"
_CLOSERS = "\"'“”‘’«»„‹›)]}>.;:!?…"


def _trim(word: str) -> str:
    # A trailing period belongs to an abbreviation when the word has another period
    # ("U.S.", "D.C."); otherwise it is sentence punctuation ("Clarke.").
    keep_period = word.endswith(".") and "." in word[:-1]
    core = word.lstrip(_OPENERS).rstrip(_CLOSERS)
    if keep_period and core and not core.endswith("."):
        core += "."
    return core


def normalize_text(text: str) -> str:
    """NFC-normalised, stripped text: the form terms and cache keys are built from."""
    return unicodedata.normalize("NFC", text).strip()


def is_pronoun(entity: object) -> bool:
    """True when the whole entity string is a pronoun (see `PRONOUNS`)."""
    if not isinstance(entity, str):
        return False
    return normalize_text(entity).strip(_OPENERS + _CLOSERS).lower() in PRONOUNS


def content_words(entity: object) -> list[str]:
    """Content words of one entity string, in order (docs/PROTOCOL.md §2); [] for empty input."""
    if not isinstance(entity, str):
        return []
    text = normalize_text(entity)
    if not text:
        return []
    words = [w for w in (_trim(raw) for raw in text.replace(",", " ").split()) if w]
    capitalised = [w for w in words if len(w) > 1 and w[0].isupper() and w.lower() not in STOPWORDS]
    if capitalised:
        return capitalised
    plain = [w for w in words if len(w) > 2 and w.lower() not in STOPWORDS]
    if plain:
        return plain
    return [text]


def build_query(head: object, tail: object, relation: object = None) -> list[str] | None:
    """Terms of the word-level AND for a pair (or a triple, for RELCHECK), or None.

    Without `relation`: content words of head then tail, deduplicated case-insensitively;
    None when fewer than two distinct terms remain. With `relation` (RELCHECK: subject +
    relation + object): head, relation, tail in that order; None under three terms.
    Callers reject pronoun heads and tails first (`is_pronoun`); this function does not.
    """
    parts = [head, tail] if relation is None else [head, relation, tail]
    if any(not isinstance(p, str) or not normalize_text(p) for p in parts):
        return None
    terms: list[str] = []
    seen: set[str] = set()
    for part in parts:
        for word in content_words(part):
            key = word.casefold()
            if key not in seen:
                seen.add(key)
                terms.append(word)
    needed = 2 if relation is None else 3
    return terms if len(terms) >= needed else None


def parse_query(text: str) -> list[list[str]]:
    """A query in the infini-gram syntax ("A AND B OR C") as CNF clauses of terms.

    AND binds looser than OR, as in the infini-gram API: "A AND B OR C" is A AND (B OR C).
    Raises ValueError for an empty query, an empty term or a dangling AND/OR.
    """
    text = normalize_text(text or "")
    if not text:
        raise ValueError("the query is empty")
    words = text.split()
    if words[0] in ("AND", "OR") or words[-1] in ("AND", "OR"):
        raise ValueError(f"the query {text!r} starts or ends with an operator")
    clauses = []
    for clause_text in re.split(r"\s+AND\s+", text):
        terms = [normalize_text(t) for t in re.split(r"\s+OR\s+", clause_text)]
        if any(not t or t.split()[0] in ("AND", "OR") or t.split()[-1] in ("AND", "OR") for t in terms):
            raise ValueError(f"empty term or misplaced operator in clause {clause_text!r}")
        clauses.append(terms)
    return clauses


def format_query(clauses: list[list[str]]) -> str:
    """The infini-gram query string of CNF clauses (inverse of `parse_query`)."""
    return " AND ".join(" OR ".join(clause) for clause in clauses)
