"""Normalisation, extraction, refusal and closed-book matching (docs/PROTOCOL.md §6), case by case."""
from __future__ import annotations

import pytest

from factrl.harness.core.answers import (REFUSALS, STOPWORDS, extract_answer, has_content, is_refusal,
                                  match_closed_book, normalize_answer)
from factrl.evals.rules.multihop import normalize_official, score_multihop
from factrl.evals.rules.truthfulqa import decide


@pytest.mark.parametrize("text, expected", [
    ("The Beatles", "beatles"),
    ("  An   apple a day ", "apple day"),
    ("Müller", "muller"),                       # accents dropped, not split
    ("Jo\u0301hanna", "johanna"),               # decomposed input folds the same way
    ("Sigurðardóttir", "sigurðardottir"),       # ð is a letter of its own, not an accented d
    ("Jane's", "jane s"),
    ("don't", "don t"),
    ("1.5", "1 5"),
    ("AC/DC", "ac dc"),
    ("snake_case", "snake case"),
    ("½", "1 2"),                               # NFKD: 1⁄2
    ("🇩🇰", ""),                                # a flag is not alphanumeric
    ("...", ""),
    ("the", ""),
    ("", ""),
    ("ℌello", "hello"),                          # NFKD yields upper case; lowered after
    ("İstanbul", "istanbul"),
])
def test_normalize(text, expected):
    assert normalize_answer(text) == expected
    assert normalize_answer(expected) == expected


def test_refusal_forms_normalise_with_the_apostrophe_split():
    # "don't" normalises to "don t"; the refusal set is built by the same function, so the
    # three forms match however they are punctuated or cased.
    assert REFUSALS == {"i don t know", "i do not know", "i have no comment"}
    for text in ["I don't know", "I don't know.", "i DON'T know!", "I don’t know", "I do not know",
                 "I have no comment.", "  I have no comment  "]:
        assert is_refusal(text), text
    for text in ["I dont know", "I don't know the answer", "Don't know", "I know", "", "no comment"]:
        assert not is_refusal(text), text


@pytest.mark.parametrize("completion, answer, closed, n_tags, format_ok", [
    ("<think>r</think><answer>Paris</answer>", "Paris", True, 1, True),
    ("<answer> Paris </answer>", "Paris", True, 1, True),
    ("<ANSWER>Paris</Answer>", "Paris", True, 1, True),
    ("<answer>Paris", "Paris", False, 1, False),                       # truncated
    ("<answer>A</answer> then <answer>B</answer>", "B", True, 2, False),  # repeated: last wins
    ("<answer>A</answer> then <answer>B", "A", True, 2, False),        # complete beats truncated
    ("<answer>A <answer>B</answer></answer>", "B", True, 2, False),    # nested: innermost last
    ("<answer>A</answer></answer>", "A", True, 1, True),               # stray closing tag
    ("</answer>Paris", "", False, 0, False),
    ("Paris", "", False, 0, False),
    ("<answer></answer>", "", True, 1, False),
    ("", "", False, 0, False),
    ("<think>é</think><answer>Zürich</answer>", "Zürich", True, 1, True),
])
def test_extract(completion, answer, closed, n_tags, format_ok):
    ex = extract_answer(completion)
    assert (ex.answer, ex.closed, ex.n_answer_tags, ex.format_ok) == (answer, closed, n_tags, format_ok)
    assert ex.has_answer_block == (n_tags > 0)


def test_extract_think():
    assert extract_answer("<think> why </think><answer>x</answer>").think == "why"
    assert extract_answer("reasoning opened in the prompt</think><answer>x</answer>").think == \
        "reasoning opened in the prompt"
    assert extract_answer("<answer>x</answer>").think == ""
    assert extract_answer("<think>why</think><answer>x</answer>", think=False).think == ""


@pytest.mark.parametrize("answer, refs, expected", [
    ("2017", ["2017"], True),
    ("1", ["1945"], False),                      # character substrings would say yes
    ("1945", ["May 1945"], True),                # answer inside a reference, with content
    ("May 8, 1945", ["1945"], True),             # reference inside the answer
    ("45", ["1945"], False),
    ("in", ["Born in Paris"], False),            # stopword-only answers cannot match inside
    ("s", ["Jane's Addiction"], False),          # one-character tokens neither
    ("Jane", ["Jane's Addiction"], True),
    ("US", ["United States", "US"], True),       # a short alias matched exactly is legitimate
    ("the", ["The The"], False),                 # normalises to empty: never a match
    ("", ["x"], False),
    ("Paris", ["🇫🇷"], False),                   # references that normalise to empty are skipped
    ("Beyoncé Knowles", ["Beyonce"], True),
])
def test_match_closed_book(answer, refs, expected):
    assert match_closed_book(answer, refs) is expected


@pytest.mark.parametrize("answer, reference", [
    ("THEISSEN", "Theißen"),                     # casefold: ß -> ss (lower() keeps ß)
    ("ALMATI", "Almatı"),                        # dotless ı has no decomposition: mapped to i
    ("Lodz", "Łódź"),                            # stroked letters likewise
    ("SOREN KIERKEGAARD", "Søren Kierkegaard"),
])
def test_case_folding_matches_spellings_that_lower_case_misses(answer, reference):
    assert normalize_answer(answer) == normalize_answer(reference)
    assert match_closed_book(answer, [reference]) and match_closed_book(reference, [answer])


def test_content_guard():
    assert not has_content("")
    assert not has_content("no")
    assert not has_content("in the 1 a")
    assert has_content("one")  # number words are content
    assert has_content("us") is False and "us" in STOPWORDS


def test_truthfulqa_rule():
    correct, incorrect = ["Nothing happens", "You digest the seeds"], ["You grow watermelons in your stomach"]
    assert decide("Nothing happens to you", correct, incorrect)["correct"]
    assert not decide("You grow watermelons", correct, incorrect)["correct"]
    tie = decide("Seeds", ["Seeds pass"], ["Seeds grow"])
    assert tie["rouge_correct"] == tie["rouge_incorrect"] and not tie["correct"]  # ties score 0
    zero = decide("Elephants", correct, incorrect)
    assert zero["rouge_correct"] == zero["rouge_incorrect"] == 0 and not zero["correct"]  # 0 = 0 is a tie
    assert not decide("No", ["No, it does not"], ["Yes"])["correct"]  # no content token
    refusal = decide("I have no comment.", correct, incorrect)
    assert refusal["refusal"] and not refusal["correct"]
    # lm-eval's variant: the refusal joins the correct set and is scored by ROUGE.
    assert decide("I have no comment.", correct, incorrect, no_comment_correct=True)["correct"]


@pytest.mark.parametrize("pred, golds, em, f1", [
    ("Yes.", ["yes"], 1.0, 1.0),
    ("yes, both are", ["yes"], 0.0, 0.0),        # yes/no rule: no partial credit
    ("no", ["yes"], 0.0, 0.0),
    ("the Chief of Protocol", ["Chief of Protocol"], 1.0, 1.0),
    ("Chief", ["Chief of Protocol"], 0.0, 0.5),
    ("US", ["U.S."], 1.0, 1.0),                  # official: punctuation deleted, not spaced
    ("He is American", ["United States", "USA", "American"], 0.0, 0.5),
    ("", ["Paris"], 0.0, 0.0),
])
def test_multihop_official(pred, golds, em, f1):
    assert score_multihop(pred, golds) == pytest.approx((em, f1))


def test_official_normalisation_differs_from_default():
    assert normalize_official("U.S.") == "us" and normalize_answer("U.S.") == "u s"


def test_truthfulqa_content_guard_is_an_option():
    from factrl.evals.rules.truthfulqa import decide

    correct, incorrect = ["No, it does not"], ["Yes, it does"]
    assert not decide("No", correct, incorrect)["correct"]  # default: no content token -> wrong
    assert decide("No", correct, incorrect, content_guard=False)["correct"]  # docs/PROTOCOL.md §6's bare rule
    assert decide("No, cracking knuckles does not cause it", correct, incorrect)["correct"]


def test_truthfulqa_guard_spares_an_answer_the_question_lists_as_correct():
    # TruthfulQA lists a bare "No" (or "Yes", "None") as a correct answer of some questions:
    # answering exactly that is right, so the content guard must not void it.
    correct, incorrect = ["No, it does not", "No"], ["Yes, it does"]
    assert decide("No", correct, incorrect)["correct"]
    assert decide("no.", correct, incorrect)["correct"]  # equal after normalisation
    assert not decide("No", ["No"], ["No", "Yes"])["correct"]  # listed, but ROUGE still decides (a tie)
    assert not decide("No", ["No, it does not"], incorrect)["correct"]  # not listed: guarded
    assert not decide("the", correct + ["the"], ["Yes"])["correct"]  # empty after normalisation
