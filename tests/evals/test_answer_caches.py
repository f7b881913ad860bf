"""The answer-normalisation caches (matching.normalize_answer, asserted.tokens) return what the
uncached functions compute, and a caller that changes a returned Tokens cannot change the next."""
from __future__ import annotations

from factrl.harness.core.answers import asserted
from factrl.harness.core.answers.matching import normalize_answer


def test_tokens_hand_each_caller_its_own_lists():
    first = asserted.tokens("Mount St. Mary's, in Emmitsburg")
    words, caps = list(first.words), list(first.caps)
    first.words.append("intruder")
    first.caps[0] = not first.caps[0]
    again = asserted.tokens("Mount St. Mary's, in Emmitsburg")
    assert again.words == words and again.caps == caps and again.words is not first.words
    uncached = asserted._tokens.__wrapped__("Mount St. Mary's, in Emmitsburg")
    assert (tuple(again.words), tuple(again.caps), again.lettered) == uncached


def test_normalize_answer_cached_equals_uncached():
    for text in ["The Müller's THEISSEN", "Łódź", "  a  ", "", "don't", "U.S.A."]:
        assert normalize_answer(text) == normalize_answer.__wrapped__(text) == normalize_answer(text)
