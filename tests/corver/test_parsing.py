"""The extractor output parser: robust to quoting, chatter, truncation; never raises."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factrl.methods.corver.parsing import EXAMPLES, build_prompt, parse_triples


@pytest.mark.parametrize("text, expected", [
    ('[["Paris", "capital of", "France"]]', [["Paris", "capital of", "France"]]),
    ("entities:\n[['A', 'b', 'C'], ['D', 'e', 'F']] trailing words", [["A", "b", "C"], ["D", "e", "F"]]),
    ("[[Paris, capital of, France]]", [["Paris", "capital of", "France"]]),
    ("[[Sacramento, capital of, California, United States]]",
     [["Sacramento", "capital of", "California, United States"]]),  # bare: extra commas go to the object
    ('[["Rajiv Rai", "born in", "Mumbai, Maharashtra, India"]]', [["Rajiv Rai", "born in", "Mumbai, Maharashtra, India"]]),
    ("[]", []),
    ("There are no facts here.", []),
    ("", []),
    ('```json\n[["X", "y", "Z"]]\n```', [["X", "y", "Z"]]),
    ('[["A", "b", "C"], ["D", "e"', [["A", "b", "C"], ["D", "e"]]),  # cut by the token limit
    ("[[\u201cCurly\u201d, \u201cquoted\u201d, \u201cName\u201d]]", [["Curly", "quoted", "Name"]]),
    ('["A", "b", "C"]', [["A", "b", "C"]]),  # a single triple without the outer list
    ("[[O'Brien, born in, Dublin]]", [["O'Brien", "born in", "Dublin"]]),
    ('[["He said \\"hi\\"", "to", "Bob"]]', [['He said "hi"', "to", "Bob"]]),
    ('[[1889, "year of", "Eiffel Tower"]]', [["1889", "year of", "Eiffel Tower"]]),
    ("[[true, null, 2]]", []),
    ("[" * 5000 + "]" * 5000, []),
    ("[[[[[[[[[[[[x]]]]]]]]]]]]", []),
    (None, []),
])
def test_parse_cases(text, expected):
    assert parse_triples(text) == expected


def _well_formed(value):
    return isinstance(value, list) and all(isinstance(t, list) and all(isinstance(x, str) for x in t) for t in value)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_never_raises_and_always_lists_of_strings(text):
    assert _well_formed(parse_triples(text))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('[]",\' \\abcXY\u201c\u201d:')), max_size=80))
def test_bracket_and_quote_soup(text):
    assert _well_formed(parse_triples(text))


entity = st.text(min_size=1, max_size=20).filter(lambda s: s.strip())
triples = st.lists(st.lists(entity, min_size=3, max_size=3), max_size=4)
noise = st.text(alphabet=st.characters(blacklist_characters="[]`"), max_size=30)


@settings(max_examples=200, deadline=None)
@given(triples, noise, noise)
def test_json_output_round_trips_inside_chatter(value, before, after):
    text = f"{before}{json.dumps(value, ensure_ascii=False)}{after}"
    assert parse_triples(text) == [[x.strip() for x in t] for t in value]


bare = st.text(alphabet=st.sampled_from(list("abcdefXYZ 019-.")), min_size=1, max_size=12).filter(
    lambda s: s.strip() and s.strip()[0] not in "\"'")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(bare, min_size=3, max_size=3), min_size=1, max_size=3))
def test_unquoted_lists(value):
    text = "[" + ", ".join("[" + ", ".join(t) + "]" for t in value) + "]"
    assert parse_triples(text) == [[x.strip() for x in t] for t in value]


def test_prompt_ends_with_the_task_block_and_examples_parse():
    prompt = build_prompt("Paris is in France.")
    assert prompt.endswith("Sentence:\nParis is in France.\nentities:\n")
    for sentence, expected in EXAMPLES:
        assert f"Sentence:\n{sentence}\nentities:\n{json.dumps(expected, ensure_ascii=False)}" in prompt
