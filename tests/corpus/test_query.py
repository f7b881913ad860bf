"""Query construction (docs/PROTOCOL.md §2): content words, fallbacks, dedup, RELCHECK, query syntax."""
import pytest

from factrl.harness.services.corpus import (PRONOUNS, QUERY_VERSION, STOPWORDS, build_query, content_words, is_pronoun,
                                   parse_query)
from factrl.harness.services.corpus.query import format_query


@pytest.mark.parametrize("entity, words", [
    ("Congress of the United States", ["Congress", "United", "States"]),
    ("John Adams", ["John", "Adams"]),
    ("theory of general relativity", ["theory", "general", "relativity"]),  # no capitalised word
    ("The Beatles", ["Beatles"]),  # capitalised stopword dropped
    ("of the", ["of the"]),  # nothing left: the stripped string itself
    ("  an  ", ["an"]),
    ("A", ["A"]),  # one character: fallback to the string
    ("Paris, France", ["Paris", "France"]),  # commas split like whitespace
    ('"The Sentinel" (1951)', ["Sentinel"]),  # quotes and brackets trimmed
    ("Arthur C. Clarke.", ["Arthur", "Clarke"]),  # initial "C" is one character once trimmed
    ("U.S. Navy", ["U.S.", "Navy"]),  # abbreviation keeps its periods
    ("Jean-Paul Sartre", ["Jean-Paul", "Sartre"]),
    ("Zürich", ["Zürich"]),
    ("Zu\u0308rich", ["Zürich"]),  # NFC: combining diaeresis composed
    ("東京 tower", ["tower"]),  # CJK has no case: the longer-than-two-characters rule applies
    ("", []),
    ("   ", []),
])
def test_content_words(entity, words):
    assert content_words(entity) == words


def test_content_words_rejects_non_strings():
    assert content_words(None) == []
    assert content_words(42) == []


def test_build_query_dedups_case_insensitively_head_then_tail():
    assert build_query("Paris", "paris France") == ["Paris", "France"]
    assert build_query("United States", "States of America") == ["United", "States", "America"]


def test_build_query_needs_two_distinct_terms():
    assert build_query("Paris", "PARIS") is None
    assert build_query("Paris", "") is None
    assert build_query("", "") is None
    assert build_query(None, "Paris") is None
    assert build_query("Paris", "France") == ["Paris", "France"]


def test_build_query_relcheck_order_and_three_terms():
    assert build_query("Marie Curie", "Warsaw", "was born in") == ["Marie", "Curie", "born", "Warsaw"]
    # "is in" has only stopwords: its single term is the string itself (docs/PROTOCOL.md §2 fallback).
    assert build_query("Paris", "France", "is in") == ["Paris", "is in", "France"]
    assert build_query("Paris", "France", "capital of") == ["Paris", "capital", "France"]
    assert build_query("Paris", "Paris", "capital") is None


def test_word_lists_are_versioned_and_consistent():
    assert QUERY_VERSION
    assert {"the", "of", "and", "is", "it"} <= STOPWORDS
    assert {"he", "she", "they", "this", "who", "someone", "himself", "theirs"} <= PRONOUNS
    assert all(w == w.lower() for w in STOPWORDS | PRONOUNS)


@pytest.mark.parametrize("text, expected", [
    ("He", True), (" she ", True), ("Themselves", True), ("no one", True), ("\"it\"", True),
    ("Paris", False), ("", False), (None, False), ("Hebrew", False),
])
def test_is_pronoun(text, expected):
    assert is_pronoun(text) is expected


def test_parse_and_format_query():
    assert parse_query("Paris AND France OR Germany") == [["Paris"], ["France", "Germany"]]
    assert parse_query("  New York  AND  city ") == [["New York"], ["city"]]
    assert format_query([["Paris"], ["France", "Germany"]]) == "Paris AND France OR Germany"
    for bad in ["", "   ", " AND ", "Paris AND", "OR Paris", "Paris AND OR France", "Paris OR OR France"]:
        with pytest.raises(ValueError):
            parse_query(bad)
