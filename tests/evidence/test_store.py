"""Retrieval on a store the tests build: titles, BM25 search, pool rows, stats, errors."""
import sqlite3

import pytest

from factrl.harness.core.errors import DataError
from factrl.harness.services.evidence import Passage, open_store, split_titles


def test_split_titles():
    assert split_titles("Paris; Jean-Paul Sartre ;;") == ["Paris", "Jean-Paul Sartre"]
    assert split_titles(["Paris", " "]) == ["Paris"]
    assert split_titles(None) == [] and split_titles("") == []


def test_by_title_exact_then_case_then_bm25(store):
    assert [p.title for p in store.by_title(["Paris"], k=5)] == ["Paris"]  # not Paris Hilton
    assert store.by_title("paris_hilton", k=1)[0].title == "Paris Hilton"  # case and underscores
    assert store.by_title("Sartre", k=1)[0].title == "Jean-Paul Sartre"  # BM25 on the title column
    assert store.stats()["titles_fuzzy"] == 1
    assert store.by_title("Atlantis", k=5) == []
    assert store.stats()["titles_unresolved"] == 1


def test_by_title_returns_passages_in_document_order_round_robin(store):
    mona = store.by_title("Mona Lisa", k=50)
    assert len(mona) > 3 and all(isinstance(p, Passage) and p.score == 0.0 for p in mona)
    assert [p.passage_id for p in mona] == sorted(p.passage_id for p in mona)
    assert mona[0].text.startswith("Sentence 0 ")
    mixed = store.by_title("Mona Lisa;Paris", k=3)
    assert [p.title for p in mixed] == ["Mona Lisa", "Paris", "Mona Lisa"]


def test_passages_respect_the_word_budget(store):
    assert all(len(p.text.split()) <= 32 for p in store.by_title("Mona Lisa", k=50))
    assert store.manifest["counts"]["max_passage_tokens"] <= 32
    # cut at sentence ends: every Mona Lisa passage ends with a full stop
    assert all(p.text.endswith(".") for p in store.by_title("Mona Lisa", k=50))


def test_search_ranks_by_bm25_and_restricts_to_titles(store):
    found = store.search("capital of France", k=3)
    assert found[0].title == "Paris" and found[0].score > 0
    assert [p.score for p in found] == sorted((p.score for p in found), reverse=True)
    assert [p.title for p in store.search("Paris", k=5, titles=["Paris Hilton"])] == ["Paris Hilton"]
    assert store.search("Paris", k=5, titles=["Atlantis"]) == []
    assert store.search("", k=5) == [] and store.stats()["empty_queries"] == 1


def test_for_row_selects_articles_fills_to_k_and_counts_missing(store):
    got = store.for_row({"question": "q", "title": "Mona Lisa"}, "Sentence 7 Louvre", k=4)
    assert len(got) == 4 and got[0].title == "Mona Lisa" and got[0].score > 0
    assert len({p.passage_id for p in got}) == 4
    paris = store.for_row({"title": "Paris"}, "unrelated words entirely", k=5)
    assert [p.title for p in paris] == ["Paris"] and paris[0].score == 0.0  # filled from the article
    assert store.for_row({"question": "q"}, "Paris", k=5) == []
    assert store.for_row({"question": "q", "title": " ; "}, "Paris", k=5) == []
    assert store.for_row({"title": "Atlantis"}, "Paris", k=5) == []
    stats = store.stats()
    assert stats["rows"] == 5 and stats["no_title"] == 2 and stats["rows_title_missing"] == 1


def test_describe_is_a_component_entry(store):
    entry = store.describe()
    assert entry["kind"] == "evidence" and entry["backend"] == "sqlite-fts5"
    assert entry["manifest_hash"] == store.manifest_hash and len(store.manifest_hash) == 64
    assert entry["stand_in"] is False and entry["tokenizer"] == "words" and entry["passage_tokens"] == 32


def test_missing_store_is_a_one_line_data_error(tmp_path):
    with pytest.raises(DataError, match=r"does not exist; build it with `harness evidence build") as err:
        open_store(tmp_path / "nowhere.sqlite3")
    assert "\n" not in str(err.value) and str(tmp_path / "nowhere.sqlite3") in str(err.value)
    with pytest.raises(DataError, match="evidence.store is not set"):
        open_store("???")


def test_empty_or_foreign_store_is_a_data_error(tmp_path, store_path):
    foreign = tmp_path / "foreign.sqlite3"
    sqlite3.connect(foreign).execute("CREATE TABLE x (y)").connection.commit()
    with pytest.raises(DataError, match="is not an evidence store.*harness evidence build"):
        open_store(foreign)
    not_db = tmp_path / "text.sqlite3"
    not_db.write_text("hello")
    with pytest.raises(DataError, match="is not an evidence store"):
        open_store(not_db)
    empty = tmp_path / "empty.sqlite3"
    empty.write_bytes(store_path.read_bytes())
    conn = sqlite3.connect(empty)
    conn.execute("DELETE FROM passages")
    conn.commit()
    conn.close()
    with pytest.raises(DataError, match="has no passages; rebuild it"):
        open_store(empty)


def test_store_is_usable_from_threads(store):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda q: store.search(q, k=1)[0].title, ["Sartre", "Seine", "Eros", "Zurich"] * 5))
    assert results[:4] == ["Jean-Paul Sartre", "Paris", "NEAR Shoemaker", "Zürich"]
