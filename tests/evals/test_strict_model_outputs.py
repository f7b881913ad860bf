"""Strict accuracy on real model outputs (evals/README.md, "Strict accuracy": the false
withdrawals on real model outputs, 2026-12-05): SmolLM2-135M's greedy answers to the first 3,300
NQ-Open and PopQA questions that the protocol credits (215), each withdrawal reviewed by hand.
Strict v3 withdrew 8 of them falsely (`"v3": "false_withdrawal"`); v4's rules were written
against them, so v4 was then measured on held-out outputs: sample `a` (`"sample": "a"`: NQ-Open
questions 3,300-3,609 and PopQA 3,300-4,999, 95 credited), where a draft of v4 withdrew 2 falsely
(`"v4_draft": "false_withdrawal"`, fixed in v4 before release), and sample `b` (PopQA's capital,
colour, religion and sport questions, 369 credited), where the draft withdrew 5 falsely (a place
and its qualifiers after the gold, "based in Doncaster, North Yorkshire, England"; fixed too).
Sample `c`: PopQA's country and capital questions sampled at temperature 1.0 (159 credited), where
the draft withdrew 2 falsely (a stray closing tag, a copula's complement before the gold; fixed).
Each sample's rate before its fixes is the honest one. Sample `d`, read after v4 was final
(PopQA's capital, colour, religion and sport questions sampled at temperature 1.0, 144
credited), held 6 false withdrawals of v4: v5 credits five (`"v4": "false_withdrawal"`: a label,
a lowercase description before a dash, a prepositional opener, a relative clause, a sentence cut
by the length limit) and keeps one (`review: false`: the question's entity before a dash).
Sample `e`, read after v5 was final (b's and c's questions sampled at temperature 0.7, seeds 23
and 29; 3,773 answers, 535 credited): v5 withdraws 4 of them falsely (`review: false`: the
topic as the subject of a verb that is no copula, of a copula after an inserted clause or an
abbreviation's stops, and "and" between two adjectives before the gold), 0.75%. Sample `f`, read
after v5 was final too (PopQA's occupation, birthplace and genre questions 1-2,735 at temperature
0.7, seed 31; lowercase golds, 38 credited): 3 false withdrawals (a topic before an appositive
that holds the gold, an "or" in a clause describing the gold, the topic's kind before a lowercase
gold: "a film and TV show based on the psychological thriller genre"). Strict v6 credits six of
e's and f's seven (`"v5": "false_withdrawal"`) and keeps the last (`review: false`). Sample `g`,
read after v6 was final (b's questions at temperature 0.7, seed 41, 265 credited, and the first
1,872 of f's questions at seed 43, 28 credited): 3 false withdrawals of 293 (1.0%). Sample `h`,
read after v6 was final too (the first 641 of b's questions at seed 47 and 735 of c's at seed 53;
178 credited): 2 false withdrawals. Strict v7 reads the question and credits five of g's and h's
(`"v6": "false_withdrawal"`). Sample `i`, read after v7 was final (b's questions at seed 59 and c's
at seed 61, temperature 0.7; 3,773 answers, 529 credited): 4 false withdrawals (0.76%; `review:
false`: a unit conversion in brackets after the gold, a saint's "St." read as a sentence's end, a
stray tag naming the question's entity after the gold, a title-case "Football Player"). Sample `j`,
read after v7 was final too, its stop fixed beforehand (b's questions at seed 67, c's at seed 71;
532 credited): 3 false withdrawals (two saints' "St.", "a Spanish city and capital of Spain"). Sample
`k`, read after v7 was final too (seeds 73 and 79, stopped at a time fixed beforehand: 3,456
answers, 443 credited): 1 ("The Japanese believe in Shintoism, who believes in the Japanese, ...").
The fixture stores only the model's completions and the questions' row indexes and ids; the golds
are read from the shared benchmark files."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from factrl.evals.sets import load_set
from factrl.harness.core.answers import extract_answer, match_closed_book, strict_correct

OUTPUTS = Path(__file__).resolve().parent / "fixtures" / "strict_model_outputs.jsonl"
# The hand review of each withdrawal (evals/README.md): the asserted answer is another answer
# (`other`), a part of a gold that no alias names (`fragment`), two or more answers one of which
# is the gold (`list`), a form of the gold no alias lists (`unlisted_form`: "Carl Linnaeus" for
# "Swedish botanist Carl Linnaeus", "The Conservative Party" for "Conservative"), two answer blocks
# (`two_blocks`), or exactly one answer that is the gold or one of its aliases (`false`: a false
# withdrawal; these rows pin the current version's known false withdrawals, so a rule that fixes them
# changes them here on purpose).
REVIEW = {"other", "fragment", "list", "unlisted_form", "two_blocks", "false"}


def _rows() -> list[dict]:
    return [json.loads(line) for line in OUTPUTS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_stored_verdicts_of_credited_model_outputs(shared_data):
    rows = _rows()
    records = {name: load_set(name, data_dir=shared_data / "benchmarks").records for name in {r["set"] for r in rows}}
    verdicts: dict[str, Counter] = {}
    for row in rows:
        record = records[row["set"]][row["index"]]
        assert record.id == row["id"], row
        golds = [str(g) for g in record.references]
        assert match_closed_book(extract_answer(row["completion"], think=False).answer, golds), row  # credited
        verdict = strict_correct(row["completion"], golds, question=record.question)
        assert (verdict.correct, verdict.reason) == (row["correct"], row["reason"]), (row, verdict)
        verdicts.setdefault(row.get("sample", "first"), Counter())[verdict.reason or "kept"] += 1
    # evals/README.md: every credited output of each sample
    expected = {"first": (215, 135), "a": (95, 77), "b": (369, 249), "c": (159, 106), "d": (144, 100), "e": (535, 368),
                "f": (38, 18), "g": (293, 193), "h": (178, 128), "i": (529, 365),
                "j": (532, 365), "k": (443, 312)}
    assert {name: (sum(c.values()), c["kept"]) for name, c in verdicts.items()} == expected


def test_v3_false_withdrawals_are_credited():
    """The 8 answers strict v3 withdrew although each asserts exactly the gold: a truncated closing
    tag, a date before a year gold, the question's topic as the subject, "and" inside the gold's
    description (strict.py, version 4)."""
    v3 = [row for row in _rows() if row.get("v3") == "false_withdrawal"]
    assert len(v3) == 8 and all(row["correct"] and "review" not in row for row in v3)
    draft = [row for row in _rows() if row.get("v4_draft") == "false_withdrawal"]  # "No, I do not need a permit or license"
    assert Counter(row["sample"] for row in draft) == {"a": 2, "b": 5, "c": 2} and all(row["correct"] for row in draft)
    v4 = [row for row in _rows() if row.get("v4") == "false_withdrawal"]  # "Sport: Football"
    assert len(v4) == 5 and {row["sample"] for row in v4} == {"d"} and all(row["correct"] for row in v4)
    known = [row for row in _rows() if row.get("review") == "false"]  # v7's known false withdrawals
    assert Counter(row["sample"] for row in known) == {"f": 1, "g": 1, "i": 4, "j": 3, "k": 1}
    v5 = [row for row in _rows() if row.get("v5") == "false_withdrawal"]  # "2010–11 Cruz Azul season plays soccer"
    assert Counter(row["sample"] for row in v5) == {"e": 4, "f": 2} and all(row["correct"] for row in v5)
    # v5 withdrew these rightly; v6 credits them (strict.py, "Known limits"): a team's name that ends in
    # the gold ("2011–12 Elon Phoenix Men's Basketball"), an "and" read as joining two modifiers ("A
    # mystic and spiritual female poet", where "mystic" may be a noun)
    assert sorted(row["v5_review"] for row in _rows() if "v5_review" in row) == ["list", "other"]


def test_v6_false_withdrawals_are_credited_by_the_question_aware_reading():
    """Strict v7 reads the question: five of v6's seven known false withdrawals are credited (the
    question's entity before a dash, the topic restated as a complement, a relative clause after a
    gold that does not open its piece, a possessive subject before a copula, a lowercase appositive
    after the gold's description), and so are eleven
    answers reviewed as a correct answer in a form v6 does not read ("Alberta, Canada" for "In what
    country is Kavanagh, Alberta?"). Two answers the review called wrong are credited too: the
    reading's known cost, pinned (strict.py, "Known limits")."""
    v6 = [row for row in _rows() if row.get("v6") == "false_withdrawal"]
    assert Counter(row["sample"] for row in v6) == {"d": 1, "g": 2, "h": 2} and all(row["correct"] for row in v6)
    reviews = Counter(row["v6_review"] for row in _rows() if "v6_review" in row)
    assert reviews == {"unlisted_form": 11, "list": 1, "other": 1}


def test_every_withdrawal_is_reviewed():
    withdrawn = [row for row in _rows() if not row["correct"]]
    assert withdrawn and all(row.get("review") in REVIEW for row in withdrawn), \
        [row for row in withdrawn if row.get("review") not in REVIEW]
    assert all("review" not in row for row in _rows() if row["correct"])
