"""The guards against unbounded sums (docs/CONTRACTS.md "Guards"): `dedupe_statements` and
`max_rewarded_statements`, off by default (= the original reward), never raising a return."""
from __future__ import annotations

import math
import re

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.services.judge import open_judge
from factrl.methods.rlfh import placement, scoring
from factrl.methods.rlfh.alignment import align_response
from factrl.methods.rlfh.prompts import prompts_for
from factrl.methods.rlfh.reward import RLFHReward
from factrl.methods.rlfh.settings import CONSTANTS, RLFHSettings

from .conftest import CURIE
from .scripted_judge import RLFHJudge
from .test_reward import batch, judge_cfg

HONEST_CORRECT = "<think>I recall that the answer is Warsaw.</think><answer>Warsaw</answer>"
REPEATED = "<think>" + " ".join([CURIE] * 40) + " I recall that the answer is Paris.</think><answer>Paris</answer>"
GUARDED = {"dedupe_statements": True, "max_rewarded_statements": 1}


def returns(judge, store, tokenizer, completions, **settings):
    reward = RLFHReward(tokenizer=tokenizer, judge=judge, store=store, settings=RLFHSettings.from_mapping(**settings))
    out = reward(**batch(tokenizer, [(c, "curie") for c in completions]))
    return [sum(r) for r in out.token_returns], out


@pytest.fixture()
def reference_judge(store):
    with open_judge(compose(["judge=reference"]).judge, prompts=prompts_for("released", "released"), evidence=store) as judge:
        yield judge


def test_the_rows_own_article_forty_times_is_bounded(reference_judge, store, tokenizer):
    """The row's evidence article repeated 40 times before a wrong answer, graded by the
    deterministic reference judge: the original reward pays it more than the honest correct
    answer; with the guards it pays no more, and the honest answer keeps its reward."""
    (correct, repeated), _ = returns(reference_judge, store, tokenizer, [HONEST_CORRECT, REPEATED])
    (g_correct, g_repeated), out = returns(reference_judge, store, tokenizer, [HONEST_CORRECT, REPEATED], **GUARDED)
    assert repeated > correct + 1.0
    assert g_repeated <= g_correct and g_correct == pytest.approx(correct)
    assert out.diagnostics["guard_clipped"] > 0
    # the release merges identical echoes (its labels are a dict), so 40 copies are judged once
    assert out.diagnostics["echoes"] < 2 * len(re.findall(r"[.!?](?:\s|$)", CURIE)) + 4


_MARKER = re.compile(r"^[(]\d+[)] ")


def _numbered(response: str) -> str:
    """A judge that echoes each sentence as written and drops its "(k)" marker from the statement."""
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", response) if len(s.split()) >= 3]
    return "\n".join(f">> Sentence {n}: {s}\n* {_MARKER.sub('', s)}" for n, s in enumerate(sentences, 1))


def test_distinct_echoes_of_one_statement_are_paid_once_when_deduplicated(store, tokenizer):
    one = "<think>Marie Curie was born in Warsaw.</think><answer>Warsaw</answer>"
    many = "<think>" + " ".join(f"({k}) Marie Curie was born in Warsaw." for k in range(40)) + "</think><answer>Warsaw</answer>"
    with RLFHJudge(default_extract=_numbered, default_verify="Correct", default_assess="4") as server, \
            open_judge(judge_cfg(server.url)) as judge:
        (single, repeated), _ = returns(judge, store, tokenizer, [one, many])
        (d_single, d_repeated), out = returns(judge, store, tokenizer, [one, many], dedupe_statements=True)
    assert repeated == pytest.approx(40 * single)  # the original: 40 echoes, 40 truth + info rewards
    assert d_repeated == pytest.approx(single) and d_single == pytest.approx(single)
    assert out.diagnostics["duplicate_statements"] == 39.0 and out.diagnostics["guard_clipped"] == 2 * 39


def _placed(tokenizer, statements):
    """(token count, alignment, labelled) of the response made of `statements`, [(sentence,
    verdict, rating)] joined by spaces and aligned with the reference splitter; `labelled()`
    builds their echoes placed on it, fresh each call (scoring marks the statements)."""
    ids = tokenizer(" ".join(s for s, _, _ in statements), add_special_tokens=False)["input_ids"]
    alignment = align_response(tokenizer, ids, splitter="reference")
    judged = placement.judged_text(alignment)

    def labelled():
        echoes = [scoring.Echo(s, [scoring.Statement(s.rstrip("."), verdict, rating)])
                  for s, verdict, rating in statements]
        for e in echoes:
            assert scoring.place(e, judged, alignment, 0.5)
        return echoes

    return len(ids), alignment, labelled


def test_a_guard_only_removes_positive_terms(tokenizer):
    """Against the original on one completion: the guard's rewards are min(original, 0) on every
    clipped term, so no token gains; penalties of repeated wrong statements stay."""
    n, alignment, labelled = _placed(tokenizer, [("Paris is in France.", "correct", 5), ("Paris is in Spain.", "wrong", 5),
                                                 ("Paris is in Spain.", "wrong", 5)])

    table = CONSTANTS["train_sh"]
    plain = scoring.score(labelled(), alignment.spans, n, table, granularity="token").rewards
    for kw in ({"dedupe": True}, {"max_rewarded": 0}, {"max_rewarded": 1, "dedupe": True}):
        guarded = scoring.score(labelled(), alignment.spans, n, table, granularity="token", **kw).rewards
        assert all(g <= p + 1e-12 for g, p in zip(guarded, plain)), kw
        assert sum(guarded) <= sum(plain)
    zero = scoring.score(labelled(), alignment.spans, n, table, granularity="token", max_rewarded=0).rewards
    assert sum(zero) == pytest.approx(2 * -1.2 * 1.3)  # both Wrong statements still cost; nothing positive left


# -- answer_gate: the answer block read by strict accuracy v2 ----------------------------------
HONEST_WRONG = "<think>I recall that the answer is Paris.</think><answer>Paris</answer>"
REFUSAL = "<think>I am not sure of the answer.</think><answer>I don't know</answer>"
GAMED = {"gold in the reasoning, a refusal": "<think>I recall that the answer is Warsaw.</think><answer>I don't know</answer>",
         "gold in the reasoning, a wrong answer": "<think>I recall that the answer is Warsaw.</think><answer>Paris</answer>",
         "two answer blocks, wrong then gold": "<think>I recall that the answer is Paris.</think>"
                                              "<answer>Paris</answer><answer>Warsaw</answer>",
         "the gold negated": "<think>I recall that the answer is not Warsaw.</think><answer>It is not Warsaw.</answer>"}


def test_the_answer_gate_pays_no_trick_above_the_honest_answer_it_builds_on(reference_judge, store, tokenizer):
    """Reference judge, the Curie row: the original pays the gold stated outside the answer above a
    refusal and above an honest wrong answer; answer_gate=strict pays none of the tricks more than
    the honest wrong answer or the refusal, and leaves the honest answers as they are."""
    texts = [HONEST_CORRECT, HONEST_WRONG, REFUSAL, *GAMED.values()]
    plain, _ = returns(reference_judge, store, tokenizer, texts)
    gated, out = returns(reference_judge, store, tokenizer, texts, answer_gate="strict")
    correct, wrong, refusal, *tricks = plain
    assert tricks[0] > refusal and tricks[1] > wrong and tricks[2] > wrong  # what the original pays
    assert gated[:3] == pytest.approx([correct, wrong, refusal])  # honest answers untouched
    for name, value in zip(GAMED, gated[3:]):
        assert value <= min(wrong, refusal), name
    assert all(g <= p + 1e-12 for g, p in zip(gated, plain))
    assert out.diagnostics["answer_gated"] >= 3  # "The answer is Warsaw" twice, "... not Warsaw" once
    gated_records = [r for r in out.records if r.get("gated")]
    assert {r["gated"] for r in gated_records} == {scoring.GOLD_NOT_ANSWERED, scoring.ANSWER_WITHDRAWN}
    assert all(r["verdict"] is not None for r in gated_records)  # the judge's verdict is kept in the records


def test_the_answer_gate_scores_a_stated_gold_wrong_and_withholds_positives_of_a_withdrawn_answer(tokenizer):
    n, alignment, labelled = _placed(tokenizer, [(s, "correct", 4) for s in (
        "Marie Curie was born in Warsaw.", "Warsaw is in Poland.", "Paris is in France.")])

    table = CONSTANTS["train_sh"]
    plain = scoring.score(labelled(), alignment.spans, n, table, granularity="token")
    answered = scoring.read_answer("<answer>Warsaw</answer>", ["Warsaw"])
    wrong = scoring.read_answer("<answer>Paris</answer>", ["Warsaw"])
    blocks = scoring.read_answer("<answer>Paris</answer><answer>Warsaw</answer>", ["Warsaw"])
    assert answered.credited and not wrong.credited and not wrong.withdrawn and blocks.reason == "multiple_blocks"
    same = scoring.score(labelled(), alignment.spans, n, table, granularity="token", gate=answered)
    assert same.rewards == plain.rewards and same.gated == 0
    echoes = labelled()
    off = scoring.score(echoes, alignment.spans, n, table, granularity="token", gate=wrong)
    assert off.gated == 2 and [st.gated for e in echoes for st in e.statements] == [
        scoring.GOLD_NOT_ANSWERED, scoring.GOLD_NOT_ANSWERED, None]
    wrong_truth = table.verdict["wrong"] * abs(table.info[4])  # the two statements of Warsaw: scored Wrong
    right_truth = table.verdict["correct"] * abs(table.info[4])
    info = scoring.info(table, [scoring.Statement("x", "correct", 4)])
    assert sum(off.rewards) == pytest.approx(2 * wrong_truth + right_truth + info)  # Paris/France keeps its pay
    withdrawn = scoring.score(labelled(), alignment.spans, n, table, granularity="token", gate=blocks)
    assert sum(withdrawn.rewards) == pytest.approx(2 * wrong_truth)  # several blocks: no positive term at all
    for outcome in (off, withdrawn):
        assert all(g <= p + 1e-12 for g, p in zip(outcome.rewards, plain.rewards))


def test_the_answer_gate_is_a_named_checked_option():
    s = RLFHSettings.from_mapping(answer_gate="strict")
    assert s.guarded and s.guards == ["answer_gate=strict"]
    assert RLFHSettings.from_mapping().guards == [] and not RLFHSettings.from_mapping().guarded
    with pytest.raises(ValueError, match=r"answer_gate='any': choose one of \('none', 'strict'\)"):
        RLFHSettings.from_mapping(answer_gate="any")


# -- answer_once: a credited answer's statements of it paid once ---------------------------------
DOUBLED = "<think>I recall that the answer is Warsaw.</think><answer>Warsaw. So the answer is Warsaw.</answer>"
# train_sh by hand (settings.py): truth = V[verdict] * |I[score]|, info = ln(max(-0.9, sum I) + 1)
ANSWER_TRUTH, ANSWER_INFO = 0.3 * 1.3, math.log(1.3 + 1)  # a Correct statement rated 5, alone in its sentence


def test_answer_once_pays_the_first_statement_of_a_credited_answer_and_keeps_every_penalty(tokenizer):
    n, alignment, labelled = _placed(tokenizer, [
        ("The answer is Ulm.", "correct", 5), ("So the answer is Ulm.", "correct", 5),
        ("Einstein was born in 1879.", "correct", 3), ("Ulm is in France.", "wrong", 4)])

    table = CONSTANTS["train_sh"]
    credited = scoring.read_answer("<answer>Ulm</answer>", ["Ulm", "Ulm, Germany"])
    wrong = scoring.read_answer("<answer>Paris</answer>", ["Ulm", "Ulm, Germany"])
    assert credited.credited and not wrong.credited

    def total(**kw):
        echoes = labelled()
        out = scoring.score(echoes, alignment.spans, n, table, granularity="token", **kw)
        return sum(out.rewards), [st.gated for e in echoes for st in e.statements], out

    einstein = 0.3 * 1.1 + math.log(1.1 + 1)
    france = -1.2 * 1.2 + math.log(1.2 + 1)  # Wrong, rated 4: a penalty and a positive info term
    plain, _, _ = total()
    assert plain == pytest.approx(2 * (ANSWER_TRUTH + ANSWER_INFO) + einstein + france)
    once, gated, out = total(once=credited)
    # the restatement earns nothing; "Ulm is in France" states the answer too: its info goes, its penalty stays
    assert once == pytest.approx(ANSWER_TRUTH + ANSWER_INFO + einstein - 1.2 * 1.2)
    assert gated == [None, scoring.ANSWER_REPEATED, None, scoring.ANSWER_REPEATED] and out.clipped == 3
    # repeats of the answer do not use up max_rewarded_statements: the Einstein statement is the second counted
    assert total(once=credited, max_rewarded=2)[0] == pytest.approx(once)
    assert total(once=wrong)[0] == pytest.approx(plain)  # an answer strict accuracy does not credit: untouched
    assert once <= plain


def test_answer_once_pays_a_doubled_answer_as_the_honest_correct_answer(reference_judge, store, tokenizer):
    """Reference judge, the Curie row: the original pays "Warsaw. So the answer is Warsaw." one more
    Correct statement rated 5 over the honest correct answer; answer_once pays it as the honest
    answer, whose own reward stays (its reasoning's sentence is its only statement of the gold)."""
    texts = [HONEST_CORRECT, DOUBLED, HONEST_WRONG]
    (correct, doubled, wrong), _ = returns(reference_judge, store, tokenizer, texts)
    (o_correct, o_doubled, o_wrong), out = returns(reference_judge, store, tokenizer, texts, answer_once=True)
    assert correct == pytest.approx(ANSWER_TRUTH + ANSWER_INFO)  # 1.22
    assert doubled == pytest.approx(correct + ANSWER_TRUTH + ANSWER_INFO)  # +1.22
    assert (o_correct, o_doubled, o_wrong) == pytest.approx((correct, correct, wrong))
    assert [r["gated"] for r in out.records if r["completion"] == 1] == [None, scoring.ANSWER_REPEATED]
    s = RLFHSettings.from_mapping(answer_once=True)
    assert s.guards == ["answer_once=true"] and not RLFHSettings.from_mapping().answer_once
