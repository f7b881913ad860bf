"""Thousands of random completions through extraction and every scoring rule: defined results, no crash."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factrl.evals.scorers.corver_official import corver_extract, corver_grade
from factrl.evals.loaders import Record
from factrl.evals.metrics import aggregate
from factrl.evals.rules.multihop import score_multihop
from factrl.evals.scorers import get_scorer
from factrl.harness.core.answers.matching import (REFUSALS, _extract_general, extract_answer, match_closed_book,
                                  normalize_answer)
from factrl.evals.sets import EvalSet
from factrl.evals.rules.truthfulqa import decide

# Fragments that stress the tag logic, mixed with arbitrary text (any Unicode, surrogates excluded
# by Hypothesis' text strategy) so that every branch of the extractor is reached.
TAGS = ["<answer>", "</answer>", "<ANSWER>", "</Answer>", "<think>", "</think>", "<", ">", "/"]
WORDS = ["I don't know", "I do not know.", "I have no comment", "the", "a", "1", "1945", "Paris", "Müller",
         "yes", "no", " ", "\n", "’", "🇩🇰", "İ", "ℌ"]
fragment = st.one_of(st.sampled_from(TAGS), st.sampled_from(WORDS), st.text(max_size=12))
completion = st.lists(fragment, max_size=14).map("".join)
references = st.lists(st.one_of(st.sampled_from(WORDS), st.text(min_size=1, max_size=10)), min_size=1, max_size=4)

FAST = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(completion)
def test_extraction_is_defined_and_both_paths_agree(text):
    ex = extract_answer(text)
    assert isinstance(ex.answer, str) and ex.answer == ex.answer.strip()
    assert ex.has_answer_block == (ex.n_answer_tags > 0)
    assert not ex.closed or ex.has_answer_block
    assert ex.format_ok == (ex.closed and ex.n_answer_tags == 1 and bool(ex.answer))
    assert "<answer>" not in ex.answer.lower() or not ex.closed
    # The ASCII fast path and the general path implement one rule.
    assert _extract_general(text) == ex


@FAST
@given(st.text(max_size=40))
def test_normalisation_is_idempotent_and_tokenised(text):
    norm = normalize_answer(text)
    assert normalize_answer(norm) == norm
    assert norm == " ".join(norm.split())
    assert not {"a", "an", "the"} & set(norm.split())


@FAST
@given(completion, references)
def test_matching_invariants(text, refs):
    answer = extract_answer(text).answer
    norm = normalize_answer(answer)
    verdict = match_closed_book(answer, refs)
    if not norm:
        assert verdict is False
    if norm and any(normalize_answer(r) == norm for r in refs):
        assert verdict is True  # an exact (normalised) answer always counts
    assert isinstance(corver_grade(corver_extract(text), refs), str)
    em, f1 = score_multihop(answer, refs)
    assert 0.0 <= f1 <= 1.0 and em in (0.0, 1.0)


@settings(max_examples=200, deadline=None)
@given(completion, references, references)
def test_truthfulqa_rule_is_defined(text, correct, incorrect):
    answer = extract_answer(text).answer
    out = decide(answer, correct, incorrect)
    # The content guard spares an answer the question lists as correct (TruthfulQA's "No").
    listed = normalize_answer(answer) in {normalize_answer(c) for c in correct}
    assert out["correct"] == ((out["content"] or listed) and not out["refusal"] and not out["empty"]
                              and out["rouge_correct"] > out["rouge_incorrect"])
    if normalize_answer(answer) in REFUSALS:
        assert not out["correct"]


@settings(max_examples=30, deadline=None)
@given(st.lists(completion, min_size=1, max_size=40))
def test_scorers_score_any_batch(texts):
    records = [Record(str(i), f"q{i}", ("Paris", "1945"), ("London",)) for i in range(len(texts))]
    for task in ("closed_book", "truthfulqa", "multihop"):
        eval_set = EvalSet("prop", task, records, "test", None, "1")
        scorer = get_scorer("default")
        table = scorer.score(eval_set, texts)
        metrics = aggregate(table, scorer.metrics(task))
        assert len(table) == len(texts)
        assert all(0.0 <= m["value"] or name == "mean_answer_words" for name, m in metrics.items())
    compat = get_scorer("corver-official").score(EvalSet("prop", "closed_book", records, "t", None, "1"), texts)
    assert len(compat) == len(texts)
