"""FActScore-NPM and SimpleQA arithmetic on hand-made cases."""
from __future__ import annotations

import pytest


def _r(*supported, failed=False, empty=False, skipped=0):
    return {"facts": [{"supported": s} for s in supported], "failed": failed, "empty": empty, "skipped": skipped}


def test_micro_precision_differs_from_factscores_macro_and_every_response_stays_in_n():
    from factrl.evals.factscore import factscore_metrics

    # CorVer §A.2: N = 1,000, "empty reasoning and fact-free responses remain in N"; a failed
    # extraction is one more fact-free response (its facts are never guessed), counted apart.
    responses = [_r(True, True, True, False),  # 3 / 4
                 _r(False),  # 0 / 1
                 _r(empty=True),  # an empty reasoning: in N with zero facts
                 _r(failed=True),  # extraction failed: in N with zero facts, counted
                 _r(skipped=2)]  # only unscorable claims: in N, no facts
    metrics, counts = factscore_metrics(responses)
    assert counts == {"responses": 5, "facts": 5, "supported": 3, "covered": 2, "empty_reasoning": 1,
                      "extraction_failed": 1, "claims_skipped": 2, "claims_no_article": 0}
    assert metrics["factscore_precision"]["value"] == pytest.approx(3 / 5)  # micro S / F
    assert metrics["factscore_precision"]["n"] == 5
    assert metrics["factscore_macro_precision"]["value"] == pytest.approx((3 / 4 + 0) / 2)  # FActScore's
    assert metrics["factscore_supported_per_response"]["value"] == pytest.approx(3 / 5)  # S / N
    assert metrics["factscore_coverage"]["value"] == pytest.approx(2 / 5)  # A / N
    assert metrics["factscore_facts_per_response"]["value"] == pytest.approx(5 / 5)  # F / N
    assert metrics["factscore_facts_per_response"]["n"] == 5
    assert {k: metrics[f"factscore_{k}"]["value"] for k in ("facts", "supported", "covered", "responses")} == \
        {"facts": 5, "supported": 3, "covered": 2, "responses": 5}


def test_papers_llama_raw_counts_give_its_ratios():
    from factrl.evals.factscore import factscore_metrics

    # F 1,543, S 1,292, A 614, N 1,000 (docs/PROTOCOL.md §6): 614 covered responses, 386 without facts.
    per = [[True, True] for _ in range(614)]
    extra_true, extra_false = 1292 - 2 * 614, 1543 - 1292
    per[0] += [True] * extra_true + [False] * extra_false
    responses = [_r(*p) for p in per] + [_r(empty=True) for _ in range(386)]
    metrics, counts = factscore_metrics(responses)
    assert (counts["facts"], counts["supported"], counts["covered"], counts["responses"]) == (1543, 1292, 614, 1000)
    assert metrics["factscore_precision"]["value"] == pytest.approx(1292 / 1543)
    assert metrics["factscore_coverage"]["value"] == pytest.approx(0.614)


def test_no_facts_at_all_is_defined():
    from factrl.evals.factscore import factscore_metrics

    metrics, counts = factscore_metrics([_r(empty=True), _r(empty=True)])
    assert metrics["factscore_precision"] == {"value": 0.0, "n": 0, "stderr": None, "higher_is_better": True}
    assert counts["responses"] == 2 and metrics["factscore_coverage"]["value"] == 0.0


@pytest.mark.parametrize("grades, correct, aga, f", [
    (["CORRECT", "INCORRECT", "NOT_ATTEMPTED", "NOT_ATTEMPTED"], 0.25, 0.5, 2 * 0.5 * 0.25 / 0.75),
    (["NOT_ATTEMPTED"] * 3, 0.0, 0.0, 0.0),  # nothing attempted: AGA 0, F 0
    ([], 0.0, 0.0, 0.0),
    (["CORRECT"] * 2, 1.0, 1.0, 1.0),
])
def test_simpleqa_accuracy_given_attempted_and_f(grades, correct, aga, f):
    from factrl.evals.semantic import simpleqa_metrics

    m = simpleqa_metrics(grades)
    assert m["simpleqa_correct"]["value"] == pytest.approx(correct)
    assert m["simpleqa_accuracy_given_attempted"]["value"] == pytest.approx(aga)
    assert m["simpleqa_f"]["value"] == pytest.approx(f)


@pytest.mark.parametrize("reply, grade", [("A", "CORRECT"), ("Based on it, A", "INCORRECT"), ("hmm", "NOT_ATTEMPTED"),
                                          ("The grade: C", "NOT_ATTEMPTED"), ("a b", "NOT_ATTEMPTED")])
def test_first_capital_letter_parse_is_simple_evals(reply, grade):
    from factrl.evals.semantic import parse_first_letter

    assert parse_first_letter(reply) == grade


@pytest.mark.parametrize("reply", ["Correct-ish", "CORRECT INCORRECT", "yes", "", "A"])
def test_semantic_parser_is_strict(reply):
    from factrl.evals.semantic.prompts import parse_semantic
    from factrl.harness.services.judge import ParseError

    with pytest.raises(ParseError):
        parse_semantic(reply)


def test_semantic_parser_tolerates_only_wrappers():
    from factrl.evals.semantic.prompts import parse_semantic, parse_yes_no

    assert parse_semantic("**Correct.**") == "CORRECT"
    assert parse_semantic("Grade: INCORRECT") == "INCORRECT"
    assert parse_yes_no("<answer>Yes</answer>") is True


def test_samples_are_seeded_and_sorted():
    from factrl.evals.sampling import sample_indexes

    a = sample_indexes(7405, 1000, 42)
    assert a == sample_indexes(7405, 1000, 42) and a == sorted(a) and len(set(a)) == 1000
    assert a != sample_indexes(7405, 1000, 43)
    assert sample_indexes(50, 100, 42) == list(range(50)) and sample_indexes(5, None, 1) == list(range(5))
