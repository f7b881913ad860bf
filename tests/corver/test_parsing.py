"""The extractor reply parser on generated inputs: it never raises, always returns a list of
lists, and reads well-formed JSON replies back exactly. Its semantics on concrete replies are the
released code's, checked against the stored vectors (test_reference_vectors.py)."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from factrl.methods.corver.parsing import parse_triples


def _well_formed(value):
    """A list of lists whose leaves are strings (lists nest when the reply nests them)."""
    def leaves_ok(item):
        return isinstance(item, str) or (isinstance(item, list) and all(leaves_ok(x) for x in item))
    return isinstance(value, list) and all(isinstance(t, list) and leaves_ok(t) for t in value)


def test_not_a_string_or_deeply_nested():
    assert parse_triples(None) == [] and parse_triples(42) == []
    deep = parse_triples("[" * 5000 + "]" * 5000)  # iterative; nesting past MAX_DEPTH is read as text
    assert _well_formed(deep) and str(deep)
    relation = "[" * 100 + "x" + "]" * 100
    assert parse_triples(f'[["Paris", {relation}, "France"]]')[0][::2] == ["Paris", "France"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_never_raises_and_always_lists(text):
    assert _well_formed(parse_triples(text))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('[]",\' \\abcXY\u201c\u201d:')), max_size=80))
def test_bracket_and_quote_soup(text):
    assert _well_formed(parse_triples(text))


# Entities as the extractor writes them: printable, no backslash or control characters (JSON would
# escape those), not blank.
entity = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="\\"),
                 min_size=1, max_size=20).filter(lambda s: s.strip())
triples = st.lists(st.lists(entity, min_size=3, max_size=3), max_size=4)
trailing = st.text(alphabet=st.characters(blacklist_characters="[]\"\u201c"), max_size=30)


@settings(max_examples=200, deadline=None)
@given(triples, trailing)
def test_json_reply_reads_back_with_trailing_chatter(value, after):
    text = f"{json.dumps(value, ensure_ascii=False)}{after}"
    assert parse_triples(text) == [[x.strip() for x in t] for t in value]
