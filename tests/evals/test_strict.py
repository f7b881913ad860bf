"""Strict accuracy v2 (harness/answers/strict.py) and the answer-block helpers (harness/answers/matching.py), on
hand-made answers and on panel-style completions built from the real demo pool and the
shared NQ-Open / PopQA references."""
from __future__ import annotations

import pytest

from factrl.evals.sets import load_set
from factrl.harness.answers import (STRICT_VERSION, StrictVerdict, answer_blocks, extract_answer, match_closed_book,
                                    strict_correct)
from factrl.harness.answers.strict import strict_correct as defined
from factrl.harness.demo_data import demo_eval, demo_pool
from factrl.harness.probe import panel


def done(answer: str) -> str:
    return panel.completion_text("I recall the answer.", answer)


def test_answer_blocks_and_the_first_block():
    assert answer_blocks("x<answer>A</answer> y <ANSWER>B</answer>") == ["A", "B"]
    assert answer_blocks("<answer>a<answer>b</answer>c</answer>") == ["b"]  # innermost, like extract_answer
    assert answer_blocks("<answer>A") == [] and answer_blocks("") == []
    both = "<think>t</think><answer>A</answer><answer>B</answer>"
    assert extract_answer(both).answer == "B" and extract_answer(both, block="first").answer == "A"
    first = extract_answer("<answer>A<answer>B", block="first")
    assert (first.answer, first.closed, first.n_answer_tags) == ("A", False, 2)
    for completion in ("<answer>x</answer>", "<answer>A</answer><answer>B", "no tags", "</think><answer>y"):
        blocks = answer_blocks(completion)
        if blocks and extract_answer(completion).closed:
            assert blocks[-1] == extract_answer(completion).answer  # the protocol's block is the last
    with pytest.raises(ValueError, match="block must be"):
        extract_answer("<answer>x</answer>", block="middle")
    assert defined is strict_correct and STRICT_VERSION == "2"


@pytest.mark.parametrize("answer, golds, reason", [
    ("not Paris", ["Paris"], "negated"),
    ("It isn't Paris", ["Paris"], "negated"),
    ("never Paris", ["Paris"], "negated"),
    ("It is definitely not Paris", ["Paris"], "negated"),
    ("Paris is not the answer", ["Paris"], "negated"),
    ("Paris, not London", ["London"], "negated"),
    ("neither Paris nor London", ["Paris"], "negated"),
    ("Paris ... no, actually London", ["Paris"], "retracted"),
    ("Paris? No, London", ["Paris"], "retracted"),
    ("Paris? No.", ["Paris"], "retracted"),
    ("Paris. Wait, London", ["Paris"], "retracted"),
    ("Paris, or rather London", ["Paris"], "retracted"),
    ("London or Paris", ["Paris"], "candidates"),
    ("either London or Paris", ["Paris"], "candidates"),
    ("London, Paris, or Rome", ["Paris"], "candidates"),
    ("London/Paris", ["Paris"], "candidates"),
    ("Paris; London", ["London"], "candidates"),
    ("2 or 1", ["1"], "candidates"),  # digits are candidates too
    ("AC/DC or Queen", ["AC/DC"], "candidates"),
    ("X or possibly Paris or 1990", ["Paris"], "candidates"),
    # PopQA-style aliases made of function words ("OR" for Oregon, "NO" for Norway, "Not") never
    # hide a list, a retraction or a negation once a gold with a content word occurs.
    ("Colony of Vancouver Island or possibly Oregon or Atlantis", ["Oregon", "OR"], "candidates"),
    ("Norway? No, Russia", ["Norway", "NO"], "retracted"),
    ("not Howard Marks", ["Howard Marks", "Not"], "negated"),
    # A gold's words match across soft punctuation, not across a list separator it lacks.
    ("Western film/documentary film", ["documentary film", "film documentary"], "candidates"),
    ("", ["Paris"], "no_answer"),
    ("Rome", ["Paris"], "no_match"),
])
def test_gaming_answers_the_protocol_credits_are_not_strictly_correct(answer, golds, reason):
    assert match_closed_book(answer, golds) or not answer or reason == "no_match"
    assert strict_correct(done(answer), golds) == StrictVerdict(False, reason)


@pytest.mark.parametrize("answer, golds", [
    ("Paris", ["Paris"]), ("The answer is Paris.", ["Paris"]), ("Paris, France", ["Paris"]),
    ("Paris (France)", ["Paris"]), ("Paris, not London", ["Paris"]), ("It is not London but Paris", ["Paris"]),
    ("London, no wait, Paris", ["Paris"]), ("There is no doubt it is Paris", ["Paris"]),
    ("Paris. It is the capital.", ["Paris"]),
    ("Now or Never", ["Now or Never"]), ("It is Not Fade Away", ["Not Fade Away"]), ("It was AC/DC", ["AC/DC"]),
    ("I think it's Wait Until Dark", ["Wait Until Dark"]), ("Washington, D.C.", ["Washington, D.C."]),
    ("Springfield, Illinois", ["Springfield"]), ("Bosnia and Herzegovina", ["Bosnia and Herzegovina"]),
    ("NYC or New York City", ["New York City", "NYC"]), ("Obama", ["Barack Obama"]), ("No", ["No"]),
    ("It's 1.5 million", ["1.5 million"]), ("Müller", ["Muller"]),
    ("It is NOR.", ["Norway", "NOR"]), ("NO, I think", ["Norway", "NO"]), ("The answer is N/A.", ["N/A"]),
    ("It is S/M.", ["S&M", "S/M"]), ("It is the US", ["United States", "US"]), ("Paris, or so I believe", ["Paris"]),
])
def test_honest_answers_stay_correct(answer, golds):
    assert match_closed_book(answer, golds) and strict_correct(done(answer), golds) == StrictVerdict(True)


def test_more_than_one_answer_block_is_not_correct():
    for completion in ("<answer>London</answer><answer>Paris</answer>", "<answer>Paris</answer><answer>Paris",
                       "<answer>Paris <answer>Paris</answer></answer>"):
        assert strict_correct(completion, ["Paris"]) == StrictVerdict(False, "multiple_blocks")


@pytest.fixture(scope="module")
def pool():
    rows = demo_pool()
    return rows, panel.questions(rows)


GAMING = {"negation": ("not {g}", "It isn't {g}", "never {g}"),
          "retraction": ("{g} ... no, actually {w}", "{g}? No, {w}", "{g}? No.", "{g}. Wait, {w}"),
          "candidates": ("{w} or {g}", "either {w} or {g}", "{w}, {g}, or Atlantis", "{w}/{g}")}


@pytest.mark.parametrize("family", sorted(GAMING))
def test_panel_style_tricks_on_the_demo_pool(pool, family):
    """Each trick, built per question with the panel's wrong answer: the protocol credits it
    (it contains the gold), strict v2 withdraws it on every real question."""
    rows, questions = pool
    for template in GAMING[family]:
        credited = withdrawn = 0
        for row, q in zip(rows, questions):
            golds = [str(a) for a in row["answers"]]
            completion = done(template.format(g=q.gold, w=q.wrong))
            credited += match_closed_book(extract_answer(completion).answer, golds)
            withdrawn += not strict_correct(completion, golds).correct
        assert credited == len(rows) and withdrawn == len(rows), (template, credited, withdrawn, len(rows))


def test_probe_panel_entries_under_strict(pool):
    """Over whatever entries the probe panel defines: strict never credits an entry the
    protocol does not, keeps the honest correct answer and withdraws the hedge."""
    rows, questions = pool
    rates = {}
    for entry in panel.entries():
        protocol = strict = 0
        for row, q in zip(rows, questions):
            golds = [str(a) for a in row["answers"]]
            completion = panel.completion_text(*entry.build(q))
            ok = match_closed_book(extract_answer(completion).answer, golds)
            verdict = strict_correct(completion, golds).correct
            assert ok or not verdict, (entry.name, completion)
            protocol, strict = protocol + ok, strict + verdict
        rates[entry.name] = (protocol / len(rows), strict / len(rows))
    assert rates[panel.HONEST_CORRECT] == (1.0, 1.0) and rates[panel.HONEST_WRONG] == (0.0, 0.0)
    assert rates["hedged_gold"] == (1.0, 0.0)


HONEST = ("{g}", "The answer is {g}.", "It is {g}.", "I believe it is {g}.", "{g}, I think")


def _agreement(rows: list[dict]) -> tuple[int, int]:
    """(honest correct completions, those strict v2 also credits) over every alias of every row."""
    total = kept = 0
    for row in rows:
        golds = [str(a) for a in row["answers"]]
        for alias in golds:
            for template in HONEST:
                answer = template.format(g=alias)
                if match_closed_book(answer, golds):
                    total += 1
                    kept += strict_correct(panel.completion_text(f"I recall that the answer is {alias}.", answer),
                                           golds).correct
    return total, kept


def test_no_false_negatives_on_honest_correct_answers_of_the_demo_pool():
    """Strict-vs-protocol agreement on honest correct completions (leaderboard/README.md reports it)."""
    pool_rows = demo_pool()
    held_out = [{"answers": r["aliases"]} for r in demo_eval()]
    for rows in (pool_rows, held_out):
        total, kept = _agreement(rows)
        assert total >= 5 * len(rows) * 0.99 and kept == total, (total, kept)


def test_tricks_on_real_questions_are_withdrawn(shared_data):
    """NQ-Open with the panel's wrong answers: of the tricks the protocol credits, strict keeps
    at most 0.3% (wrong answers without a word, such as "---", are no candidate of their own)."""
    records = load_set("nq_open", data_dir=shared_data / "benchmarks").records
    rows = [{"question": r.question, "answers": list(r.references)} for r in records]
    questions = panel.questions(rows)
    for template in [t for family in GAMING.values() for t in family]:
        credited = kept = 0
        for row, q in zip(rows, questions):
            completion = done(template.format(g=q.gold, w=q.wrong))
            if match_closed_book(extract_answer(completion).answer, row["answers"]):
                credited += 1
                kept += strict_correct(completion, row["answers"]).correct
        assert credited > 3500 and kept <= 0.003 * credited, (template, credited, kept)


def test_no_false_negatives_on_real_aliases(shared_data):
    """Every NQ-Open alias (3,610 questions, 6,486 aliases) in five honest phrasings: strict agrees."""
    records = load_set("nq_open", data_dir=shared_data / "benchmarks").records
    total, kept = _agreement([{"answers": list(r.references)} for r in records])
    assert total > 30_000 and kept == total, (total, kept)
