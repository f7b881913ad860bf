"""KnowRL's reward end to end on hand-made completions: the real judge client against a
scripted judge server on 127.0.0.1, a real evidence store, the lexical NLI stand-in (a real,
deterministic scorer, so every number below is hand-checkable) and a tiny DeBERTa.

Stand-in scores used (factrl.harness.services.nli.standin): a fact whose content words all occur in a
passage scores 1.0; "Tokyo hosts the Summer Olympics often." shares none with any passage: 0.
"""
from __future__ import annotations

import math

import pytest

from factrl.harness.services.judge import open_judge
from factrl.harness.services.judge.stats import JudgeFailuresExceeded
from factrl.methods.knowrl.reward import DIAGNOSTIC_KEYS, KnowRLReward
from factrl.methods.knowrl.scoring import KnowRLSettings

from .conftest import ROWS
from .judge_server import JudgeServer

C_CORRECT = "<think>Marie Curie was born in Warsaw.</think><answer>Warsaw</answer>"
C_REFUSE = "<think>I am not sure about this one.</think><answer>I don't know</answer>"
C_WRONG = ("<think>Marie Curie was born in Warsaw. Tokyo hosts the Summer Olympics often. Marie Curie won two "
           "Nobel Prizes.</think><answer>Paris</answer>")
C_NO_ANSWER = "Albert Einstein was born in Ulm in 1879."
C_NO_EVIDENCE = "<think>Hamlet was written by Marlowe.</think><answer>Marlowe</answer>"
C_UNREADABLE = "<think>Einstein was born in Ulm.</think><answer>Munich</answer>"

SCRIPT = {  # KnowRL's grade prompt ends "Predicted answer: <answer>\n---"; its fact prompt "Text: <text>"
    "Predicted answer: Warsaw\n": "A",
    "Predicted answer: I don't know\n": "C",
    "Predicted answer: Paris\n": "B",
    "Predicted answer: Marlowe\n": "B",
    "Predicted answer: Munich\n": "Well, it could be either of them.",  # never a grade, re-asks included
    "Tokyo hosts": "- Marie Curie was born in Warsaw.\n- Tokyo hosts the Summer Olympics often.\n"
                   "- Marie Curie won two Nobel Prizes.\n- Too short",  # under 3 words: dropped by the parser
    "born in Ulm in 1879": "- Albert Einstein was born in Ulm in 1879.",
    "I am not sure": "NON_FACTUAL: the text states no facts",
}


def judge_cfg(url: str, **overrides):
    return {"backend": "openai", "base_url": url, "model": "judge-test", "api_key_env": None, "timeout": 2.0,
            "max_retries": 0, "concurrency": 8, "max_reasks": 1, "temperature": 0.0, "max_tokens": 64,
            "cache": None, "max_failed_share": 0.5, **overrides}


def batch(pairs):
    texts = [c for c, _ in pairs]
    return {"completions": texts, "completion_ids": [list(range(3 + i)) for i in range(len(texts))],
            "rows": [ROWS[r] for _, r in pairs], "prompts": [ROWS[r]["question"] for _, r in pairs]}


@pytest.fixture()
def server():
    with JudgeServer(SCRIPT, default="C") as srv:
        yield srv


@pytest.fixture()
def judge(server):
    with open_judge(judge_cfg(server.url)) as opened:
        yield opened


def make_reward(judge, store, nli, **settings):
    return KnowRLReward(judge=judge, store=store, nli=nli, settings=KnowRLSettings.from_mapping(**settings), k=5)


def test_hand_computed_rewards(server, judge, store, standin):
    reward = make_reward(judge, store, standin)
    data = batch([(C_CORRECT, "curie"), (C_REFUSE, "curie"), (C_WRONG, "curie"), (C_NO_ANSWER, "einstein"),
                  (C_NO_EVIDENCE, "nowhere"), (C_UNREADABLE, "einstein")])
    out = reward(**data)
    wrong_fact = 2 / 3 * math.exp(1 - 10 / 3)  # 2 of 3 facts supported, n = 3
    expected = [3.0,  # A: +2, format +1
                2.0,  # C (refusal): +1, format +1, no fact term
                1.0 - 1.0 + wrong_fact,  # B: -1 + fact
                -1.0 - 1.0 + math.exp(1 - 10),  # no tags: format -1, no answer -1 (no call), 1 of 1 fact
                1.0 - 1.0 + 0.0,  # B, the row's title is not in the store: fact 0, no fact split asked
                None]  # the grade never parsed: no signal
    for got, want, ids in zip(out.token_returns, expected, data["completion_ids"]):
        if want is None:
            assert got is None
        else:
            assert got == pytest.approx([want] * len(ids))  # the scalar on every token
    d = out.diagnostics
    assert tuple(d) == DIAGNOSTIC_KEYS and all(isinstance(v, float) for v in d.values())
    assert d["correct_rate"] == pytest.approx(1 / 6) and d["refusal_rate"] == pytest.approx(1 / 6)
    assert d["incorrect_rate"] == pytest.approx(2 / 6) and d["no_answer_rate"] == pytest.approx(1 / 6)
    assert d["format_rate"] == pytest.approx(5 / 6)
    assert d["judge_items"] == 7.0  # 5 grades + 2 fact splits (none for the row without evidence)
    assert d["judge_failed"] == 1.0 and d["grade_failed"] == 1.0 and d["facts_failed"] == 0.0
    assert d["parse_failures"] == 1.0 and d["no_signal_judge"] == pytest.approx(1 / 6)
    assert d["fact_term_rate"] == pytest.approx(3 / 6) and d["no_evidence"] == 1.0
    assert d["facts_per_completion"] == pytest.approx(2.0)  # (3 + 1) / 2
    assert d["supported_share"] == pytest.approx(3 / 4)
    assert d["fact_score_mean"] == pytest.approx((wrong_fact + math.exp(-9) + 0.0) / 3)
    # Curie's article has 3 passages, Ulm's 1: 3 facts x 3 + 1 fact x 1 pairs, in one NLI call
    assert d["nli_pairs"] == 10.0
    records = {r["completion"]: r for r in out.records}
    assert records[2]["facts"] == ["Marie Curie was born in Warsaw.", "Tokyo hosts the Summer Olympics often.",
                                   "Marie Curie won two Nobel Prizes."]
    assert records[2]["supported"] == [True, False, True] and records[2]["grade"] == "B"
    assert records[5]["total"] is None and records[5]["error"].startswith("grade")
    assert records[4]["evidence"] is False and records[4]["facts"] == []


def test_judge_gets_the_raw_question_the_first_gold_and_one_call_per_kind(server, judge, store, standin):
    reward = make_reward(judge, store, standin)
    reward(**batch([(C_CORRECT, "einstein"), (C_WRONG, "curie")]))
    texts = server.texts()
    grade = [t for t in texts if "Predicted answer: Warsaw" in t][0]
    assert "Question: Where was Albert Einstein born?" in grade
    assert "\nGold target: Ulm\n" in grade  # one reference, the first (the release's best_answer)
    assert "<|" not in grade and "[INST]" not in grade  # no chat template in the question
    facts = [t for t in texts if "Tokyo hosts" in t][0]
    assert "Predicted answer" not in facts and "<answer>" not in facts  # the reasoning only
    # one grade request per answer, one fact request per wrong answer with evidence (+ the preflight)
    assert len([t for t in texts if "Predicted answer:" in t]) == 2 and len([t for t in texts if "Facts:" in t]) >= 1


def test_deberta_scores_reach_the_supported_rule(server, judge, store, deberta_dirs):
    """A real (tiny, random) DeBERTa through the real loading path: the reward's supported
    flags are exactly `any(score >= 0.3)` over the fact's passages."""
    from factrl.harness.services.nli import load_nli

    nli = load_nli({"backend": "deberta", "model": str(deberta_dirs["nli"])})
    out = make_reward(judge, store, nli)(**batch([(C_WRONG, "curie")]))
    record = out.records[0]
    passages = [p.text for p in store.by_title("Marie Curie", k=10)]
    for fact, flag in zip(record["facts"], record["supported"]):
        scores = nli.score([(p, fact) for p in passages])
        assert flag == any(s >= 0.3 for s in scores)
    assert out.token_returns[0][0] == pytest.approx(record["fact"]) and record["fact"] == pytest.approx(
        sum(record["supported"]) / 3 * math.exp(1 - 10 / 3))


def test_v1_variant(server, judge, store, standin):
    reward = make_reward(judge, store, standin, variant="v1.0.0")
    out = reward(**batch([(C_REFUSE, "curie"), (C_WRONG, "curie"), (C_CORRECT, "curie")]))
    # The refusal is -1 without a grade call, and v1.0.0 adds the fact term to every -1: its
    # reasoning is NON_FACTUAL, so no facts and fact 0. "Paris" shares no word with "Warsaw":
    # -1 without a grade call.
    assert [r["grade"] for r in out.records] == [None, None, "A"]
    assert out.records[0]["refused"] and out.records[0]["facts"] == [] and out.token_returns[0][0] == 0.0
    assert out.records[1]["fact"] == pytest.approx(2 / 15)  # min(2 / 15, 1), no length penalty
    assert out.token_returns[1][0] == pytest.approx(1.0 - 1.0 + 2 / 15)
    assert out.token_returns[2][0] == pytest.approx(3.0)
    assert not any("Predicted answer: Paris" in t for t in server.texts())


def test_failures_over_the_share_stop_the_step(store, standin):
    with JudgeServer({"Predicted answer": "500"}) as srv, open_judge(judge_cfg(srv.url)) as judge:
        reward = make_reward(judge, store, standin)
        with pytest.raises(JudgeFailuresExceeded, match=r"2 of 2 items failed.*judge.max_failed_share=0.5.*rerun"):
            reward(**batch([(C_CORRECT, "curie"), (C_WRONG, "curie")]))


def test_the_reference_judge_gives_a_real_signal(store, standin):
    """judge=reference answers KnowRL's own prompts: the grade from the protocol's matcher against
    the gold shown (an abstention is NOT_ATTEMPTED), the facts from the heuristic claims."""
    from factrl.methods.knowrl.prompts import ATOMIC_FACTS, GRADE

    with open_judge({"backend": "reference"}, prompts=[GRADE, ATOMIC_FACTS], evidence=store) as judge:
        out = make_reward(judge, store, standin)(**batch([(C_CORRECT, "curie"), (C_REFUSE, "curie"),
                                                          (C_WRONG, "curie")]))
        prompts = judge.describe()["prompts"]
    assert [r["grade"] for r in out.records] == ["A", "C", "B"]
    assert out.records[2]["facts"] == ["Marie Curie was born in Warsaw", "Tokyo hosts the Summer Olympics",
                                       "Marie Curie won two Nobel Prizes"]
    assert out.records[2]["supported"] == [True, False, True]
    assert [r[0] for r in out.token_returns] == pytest.approx([3.0, 2.0, 2 / 3 * math.exp(1 - 10 / 3)])
    assert out.diagnostics["judge_failed"] == 0.0
    assert set(prompts) == {"knowrl_grade", "knowrl_atomic_facts"}
    assert prompts["knowrl_grade"]["source"].startswith("zjunlp/KnowRL@f75b0bb")


C_NEGATED = "<think>Marie Curie was born in Poland.</think><answer>Not Warsaw</answer>"
C_RETRACTED = "<think>Marie Curie was born in Poland.</think><answer>Warsaw - no, that is wrong.</answer>"
C_TWO_BLOCKS = "<think>Marie Curie was born in Poland.</think><answer>Warsaw</answer><answer>Paris</answer>"
C_PARAPHRASE = "<think>Marie Curie was born in Poland.</think><answer>the Polish capital</answer>"


def test_the_strict_answer_guard_grades_gaming_answers_incorrect_without_a_call(store, standin):
    """answer_guard=strict (off by default): under the reference judge (containment) the negated,
    retracted and first-of-two-blocks gold earn the honest correct answer's 3.0; guarded, they are
    incorrect (-1 + fact term) without a grade call, while an honest correct answer keeps 3.0 and
    an answer the matcher misses (strict v2's no_match) still goes to the judge."""
    from factrl.methods.knowrl import guards, settings_component
    from factrl.methods.knowrl.prompts import ATOMIC_FACTS, GRADE

    pairs = [(C_CORRECT, "curie"), (C_NEGATED, "curie"), (C_RETRACTED, "curie"), (C_TWO_BLOCKS, "curie"),
             (C_PARAPHRASE, "curie")]
    with open_judge({"backend": "reference"}, prompts=[GRADE, ATOMIC_FACTS], evidence=store) as judge:
        original = make_reward(judge, store, standin)
        assert original.settings.answer_guard == "none" and guards(original.settings) == []
        plain = original(**batch(pairs))
        guarded = make_reward(judge, store, standin, answer_guard="strict")
        out = guarded(**batch(pairs))
        component = settings_component(guarded)
    assert [r[0] for r in plain.token_returns[:3]] == pytest.approx([3.0, 3.0, 3.0])  # the breach
    assert [r["guarded"] for r in out.records] == [None, "negated", "retracted", "multiple_blocks", None]
    assert out.token_returns[0][0] == pytest.approx(3.0)
    for record, returns in zip(out.records[1:4], out.token_returns[1:4]):
        assert record["grade"] is None and record["correctness"] == -1.0 and returns[0] < 1.0 + 1e-9
    assert out.records[4]["grade"] == "B"  # no_match is the judge's to grade (a real judge may accept it)
    assert out.diagnostics["skipped_judge_rate"] == pytest.approx(3 / 5)
    assert component["answer_guard"] == "strict" and component["guards"] == ["answer_guard=strict"]
    with pytest.raises(ValueError, match=r"answer_guard='loose': choose one of \('none', 'strict'\)"):
        KnowRLSettings.from_mapping(answer_guard="loose")
