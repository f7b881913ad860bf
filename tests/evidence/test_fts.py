"""User text is quoted so FTS5 operators in questions are plain words (real SQLite FTS5)."""
import sqlite3

import pytest

from factrl.harness.services.evidence.fts import match_any, match_title, query_terms, quote, words


def test_sqlite_has_fts5():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(title, text)")


def test_words_split_like_unicode61():
    assert words('NEAR(paris "france) AND -x* ^y:z') == ["NEAR", "paris", "france", "AND", "x", "y", "z"]
    assert words("Jean-Paul Sartre's") == ["Jean", "Paul", "Sartre", "s"]
    assert words("Zu\u0308rich") == ["Zürich"]  # decomposed umlaut composed first, not split


def test_query_terms_drop_stopwords_dedupe_and_cap():
    assert query_terms("What is the capital of the France? france!") == ["capital", "France"]
    assert query_terms("The Who") == ["The", "Who"]  # only stopwords: keep them
    assert query_terms("Who led the US army") == ["led", "US", "army"]  # an all-capital word is kept
    assert len(query_terms(" ".join(f"w{i}" for i in range(40)), max_terms=12)) == 12


def test_quote_doubles_internal_quotes():
    assert quote('say "hi"') == '"say ""hi"""'
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text)")
    conn.execute("INSERT INTO t VALUES ('say hi')")
    assert conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (quote('say "hi"'),)).fetchone() == (1,)


def test_expressions():
    assert match_any("NEAR AND paris") == '"NEAR" OR "AND" OR "paris"'
    assert match_title("Jean-Paul Sartre") == 'title : ("Jean" AND "Paul" AND "Sartre")'
    assert match_any("?!") is None and match_title("") is None


OPERATOR_QUERIES = [
    ("AND capital OR France NOT city", "Paris"),
    ("NEAR(Shoemaker asteroid)", "NEAR Shoemaker"),
    ("NEAR Shoemaker probe", "NEAR Shoemaker"),
    ("prog* language", "C (programming language)"),
    ("^caret pointer", "C (programming language)"),
    ("title:Sartre philosopher", "Jean-Paul Sartre"),
    ("text : Sartre", "Jean-Paul Sartre"),
    ("(Sartre) (philosopher", "Jean-Paul Sartre"),
    ('"unbalanced Sartre philosopher', "Jean-Paul Sartre"),
    ('Sartre" "Nobel', "Jean-Paul Sartre"),
    ("-Sartre Nobel", "Jean-Paul Sartre"),
    ("Jean-Paul", "Jean-Paul Sartre"),
    ("conjunction AND OR NOT", "Logical conjunction"),
    ("{title}: Seine", "Paris"),
    ("Zurich lake", "Zürich"),
]


@pytest.mark.parametrize("query,title", OPERATOR_QUERIES)
def test_operators_are_plain_words(store, query, title):
    """Every query runs (raw, most of these are FTS5 syntax errors or other queries) and
    finds the article whose words it holds."""
    found = store.search(query, k=3)
    assert found and found[0].title == title, (query, [p.title for p in found])


@pytest.mark.parametrize("query", ['"', '""', "()", "*", "^", ":", "-", "AND", "NOT NOT", "NEAR(", "'", "\\"])
def test_operator_only_queries_never_raise(store, query):
    found = store.search(query, k=3)
    assert isinstance(found, list)
    if query in ("AND", "NOT NOT"):  # the words themselves: the Logical conjunction article
        assert found[0].title == "Logical conjunction"


@pytest.mark.parametrize("raw", ['"unbalanced Sartre', "(Sartre", "NEAR(", "^", "-Sartre Nobel", "title:Sartre x:y",
                                 "AND Sartre"])
def test_the_same_text_raw_is_fts_syntax(store_path, raw):
    """Why quoting is needed: each of these, passed to MATCH as it is, is an error."""
    conn = sqlite3.connect(store_path)
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("SELECT rowid FROM passages_fts WHERE passages_fts MATCH ?", (raw,)).fetchall()
