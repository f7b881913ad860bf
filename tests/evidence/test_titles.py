"""The one pool-title check (factrl.harness.services.evidence.titles): one definition of a row without a
title, the same as the store's `for_row`, and the two one-line errors the methods share."""
from __future__ import annotations

import pytest

from factrl.harness.core.errors import DataError
from factrl.harness.services.evidence import check_pool_titles, untitled
from factrl.methods.forag import FoRAGSettings, check_titles as forag_check
from factrl.methods.fspo import check_pool_titles as fspo_check
from factrl.methods.knowrl import KnowRLSettings, check_titles as knowrl_check

# What counts as no title: no key, None, "", blanks, separators only, an empty or blank list.
UNTITLED = [{}, {"title": None}, {"title": ""}, {"title": "   "}, {"title": ";"}, {"title": " ; ;"},
            {"title": []}, {"title": ["", " "]}]
TITLED = [{"title": "Paris"}, {"title": " ;Paris"}, {"title": "Paris;France"}, {"title": ["Paris"]}]


@pytest.mark.parametrize("row", UNTITLED)
def test_untitled_rows(row):
    assert untitled(row)


@pytest.mark.parametrize("row", TITLED)
def test_titled_rows(row):
    assert not untitled(row)


def test_the_store_reads_no_articles_for_exactly_these_rows(store_path):
    """`for_row` and the check agree: every untitled row counts under the store's `no_title`, and
    every titled one is looked up (Paris is in the fixture store)."""
    from factrl.harness.services.evidence import open_store

    store = open_store(store_path)
    try:
        for row in UNTITLED:
            assert store.for_row(row, "capital", k=2) == []
        assert store.stats()["no_title"] == len(UNTITLED)
        for row in TITLED:
            assert store.for_row(row, "capital", k=2)
        assert store.stats()["no_title"] == len(UNTITLED)
    finally:
        store.close()


def test_the_two_errors_and_the_count():
    rows = [{"id": "a", "title": "Paris"}, {"id": "b", "title": " ; "}]
    assert check_pool_titles(rows, method="m", pool="p", purpose="reads articles", require_title=False) == 1
    with pytest.raises(DataError, match=r"^pool=p: none of its 1 rows has a `title`; method=m reads articles: give"):
        check_pool_titles(rows[1:], method="m", pool="p", purpose="reads articles", require_title=False)
    assert check_pool_titles(rows[1:], method="m", pool="p", purpose="x", require_title=False, require_any=False) == 1
    with pytest.raises(DataError, match=r"^pool=p: 1 of 2 rows have no `title` \(first: id 'b'\); method=m x: .*"
                                        r"method.require_title=false to skip them$"):
        check_pool_titles(rows, method="m", pool="p", purpose="x", require_title=True, without="skip them")
    assert check_pool_titles([], method="m", pool="p", purpose="x", require_title=True) == 0


def test_the_three_methods_share_the_definition():
    """A row whose title is only separators was "titled" for KnowRL's old check and untitled for the
    other two; now every method counts it the same."""
    rows = [{"id": "a", "title": "Paris"}, {"id": "b", "title": ";"}]
    forag = FoRAGSettings.from_mapping({"require_title": False})
    knowrl = KnowRLSettings.from_mapping({"require_title": False})
    assert fspo_check(rows, "p") == forag_check(rows, forag, "p") == knowrl_check(rows, knowrl, "p") == 1
    for check in (lambda r: fspo_check(r, "p"), lambda r: forag_check(r, forag, "p")):
        with pytest.raises(DataError, match="none of its 1 rows"):
            check(rows[1:])
    assert knowrl_check(rows[1:], knowrl, "p") == 1  # KnowRL scores such rows' facts as unsupported
    with pytest.raises(DataError, match="method=knowrl"):
        knowrl_check(rows, KnowRLSettings.from_mapping({"require_title": True}), "p")
