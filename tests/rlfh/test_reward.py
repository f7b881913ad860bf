"""RLFH's reward on hand-made completions: the real judge client against the scripted judge
server on 127.0.0.1, a real evidence store and the real SmolLM2 tokenizer. Expected token
positions come from the tokenizer's own offset mapping and a plain LCS table written here,
independently of the reward's alignment and bit-parallel LCS."""
from __future__ import annotations

import math

import pytest

from factrl.harness.judge.stats import JudgeFailuresExceeded
from factrl.methods.rlfh.reward import DIAGNOSTIC_KEYS, RLFHReward
from factrl.methods.rlfh.settings import RLFHSettings
from tests.knowrl.judge_server import JudgeServer

from .conftest import ROWS

C_GOOD = "<think>Marie Curie was born in Warsaw in 1867. She won two Nobel Prizes.</think><answer>Warsaw</answer>"
C_WRONG = "<think>Marie Curie was born in Paris.</think><answer>Paris</answer>"
C_HEDGE = "<think>I'm not sure about this. Is it Warsaw?</think><answer>I DON'T KNOW</answer>"
C_GARBAGE = "<think>Albert Einstein was born in Ulm in 1879.</think><answer>Ulm</answer>"
C_UNKNOWN = "<think>Einstein lived in Ulm for a year.</think><answer>Ulm</answer>"
C_NO_EVIDENCE = "<think>Hamlet was written by Marlowe.</think><answer>Marlowe</answer>"
C_NO_SCORE = "<think>Marie Curie won two Nobel Prizes.</think><answer>Warsaw</answer>"

A, B = "Marie Curie was born in Warsaw.", "Marie Curie was born in 1867."
C, D = "Marie Curie won two Nobel Prizes.", "Marie Curie was born in Paris."
E = "Marie Curie won two Nobel Prizes in physics."


def verify(statement: str) -> str:
    return f"Statement: {statement}\n\nReply with one word"


def assess(statement: str) -> str:
    return f"Statement: {statement}\n\nScores:"


SCRIPT = {
    "[0] Marie Curie was born in Warsaw in 1867.": f">> Sentence 0\n* {A}\n* {B}\n>> Sentence 1\n* {C}",
    "[0] Marie Curie was born in Paris.": f">> Sentence 0: Marie Curie was born in Paris.\n* {D}",
    "[0] Albert Einstein was born in Ulm": "Sure! Here are the statements: Einstein, Ulm.",
    "[0] Einstein lived in Ulm": ">> Sentence 7\n* Einstein lived in Ulm.",
    "[0] Marie Curie won two Nobel Prizes.": f">> Sentence 0\n* {E}",
    verify(A): "Correct", assess(A): "5",
    verify(B): "Vague", assess(B): "3",
    verify(C): "Correct", assess(C): "Score: 4",
    verify(D): "Incorrect", assess(D): "2",  # "Incorrect" is not a label: a parse failure, re-asked, then failed
    verify(E): "Wrong", assess(E): "about four",
}


def judge_cfg(url: str, **overrides):
    return {"backend": "openai", "base_url": url, "model": "judge-test", "api_key_env": None, "timeout": 2.0,
            "max_retries": 0, "concurrency": 8, "max_reasks": 1, "temperature": 0.0, "max_tokens": 256,
            "cache": None, "max_failed_share": 0.5, **overrides}


def batch(tokenizer, pairs):
    texts = [c for c, _ in pairs]
    return {"completions": texts, "prompts": [ROWS[r]["question"] for _, r in pairs],
            "completion_ids": [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts],
            "rows": [ROWS[r] for _, r in pairs]}


def token_of(tokenizer, text: str, char: int) -> int:
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return next(t for t, (a, b) in enumerate(offsets) if a <= char < b)


def lcs_end(statement: str, sentence: str) -> int:
    """The last sentence character of the earliest-ending LCS, by the textbook table."""
    a, b = statement.lower().rstrip("."), sentence.lower()
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return min(j for j in range(len(b) + 1) if table[-1][j] == table[-1][-1]) - 1


@pytest.fixture()
def server():
    with JudgeServer(SCRIPT, default="No statements") as srv:
        yield srv


@pytest.fixture()
def judge(server):
    from factrl.harness.judge import open_judge

    with open_judge(judge_cfg(server.url)) as opened:
        yield opened


def test_rewards_land_on_the_expected_tokens(server, judge, store, tokenizer):
    reward = RLFHReward(tokenizer=tokenizer, judge=judge, store=store)
    out = reward(**batch(tokenizer, [(C_GOOD, "curie"), (C_WRONG, "curie"), (C_HEDGE, "curie"),
                                     (C_GARBAGE, "einstein"), (C_UNKNOWN, "einstein"), (C_NO_EVIDENCE, "nowhere"),
                                     (C_NO_SCORE, "curie")]))
    s0, s1 = "Marie Curie was born in Warsaw in 1867.", "She won two Nobel Prizes."
    at0, at1 = C_GOOD.index(s0), C_GOOD.index(s1)
    expected = [0.0] * len(out.token_returns[0])
    # readme constants: truth = 1 * V * |I|, info = 1.2 ln(max(-0.9, sum I) + 1)
    expected[token_of(tokenizer, C_GOOD, at0 + lcs_end(A, s0))] += 0.45 * 1.25  # Correct, 5: on "Warsaw"
    expected[token_of(tokenizer, C_GOOD, at0 + lcs_end(B, s0))] += -1.0 * 0.75  # Vague, 3: on "7" of 1867
    expected[token_of(tokenizer, C_GOOD, at1 + lcs_end(C, s1))] += 0.45 * 1.0  # Correct, 4
    expected[token_of(tokenizer, C_GOOD, at0 + len(s0) - 1)] += 1.2 * math.log(1.25 + 0.75 + 1)  # s0's "."
    expected[token_of(tokenizer, C_GOOD, at1 + len(s1) - 1)] += 1.2 * math.log(1.0 + 1)  # s1's "."
    assert out.token_returns[0] == pytest.approx(expected)
    assert sum(v != 0 for v in out.token_returns[0]) == 5
    ids = tokenizer(C_GOOD, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode([ids[token_of(tokenizer, C_GOOD, at0 + lcs_end(A, s0))]]).strip() == "Warsaw"

    wrong = [0.0] * len(out.token_returns[1])  # the verdict failed: only the sentence's info reward
    wrong[token_of(tokenizer, C_WRONG, C_WRONG.index("Paris.") + 5)] = 1.2 * math.log(0.1 + 1)
    assert out.token_returns[1] == pytest.approx(wrong)
    assert out.token_returns[2] == [0.0] * len(out.token_returns[2])  # every sentence a hedge: nothing asked
    assert out.token_returns[3] is None and out.token_returns[4] is None and out.token_returns[5] is None
    assert out.token_returns[6] == [0.0] * len(out.token_returns[6])  # score failed: no truth, no info

    d = out.diagnostics
    assert tuple(d) == DIAGNOSTIC_KEYS and all(isinstance(v, float) for v in d.values())
    assert d["judge_items"] == 15.0  # 5 extractions + 5 verdicts + 5 scores; none for hedges / no evidence
    assert d["judge_failed"] == 3.0 and d["parse_failures"] == 3.0
    assert d["extract_failed"] == 1.0 and d["unknown_sentence"] == 1.0 and d["verify_failed"] == 1.0
    assert d["assess_failed"] == 1.0 and d["info_skipped"] == 1.0 and d["no_evidence"] == 1.0
    assert d["no_sentences"] == 1.0 and d["dropped_sentences"] == 3.0 and d["statements"] == 5.0
    assert d["no_signal_judge"] == pytest.approx(2 / 7)
    assert d["correct_rate"] == pytest.approx(2 / 4) and d["wrong_rate"] == pytest.approx(1 / 4)
    assert d["located_share"] == 1.0
    records = [r for r in out.records if r.get("statement") == D]
    assert records and records[0]["verdict"] is None and records[0]["truth"] is None
    # "Incorrect" was re-asked once, then the item failed: never read as Correct (or as Wrong)
    assert sum(verify(D) in t for t in server.texts()) == 2


def test_materials_are_the_rows_passages_and_the_gold_sentence(server, judge, store, tokenizer):
    reward = RLFHReward(tokenizer=tokenizer, judge=judge, store=store)
    reward(**batch(tokenizer, [(C_GOOD, "curie")]))
    text = next(t for t in server.texts() if verify(A) in t)
    assert "- Marie Curie was born in Warsaw." in text  # a passage of the row's article
    assert '- The correct answer for "Where was Marie Curie born?" is "Warsaw".' in text
    assert text.count("\n- ") == 4  # evidence_k 3 passages + the gold sentence
    reward = RLFHReward(tokenizer=tokenizer, judge=judge, store=store, settings=RLFHSettings.from_mapping(gold_material=False))
    server.requests.clear()
    reward(**batch(tokenizer, [(C_GOOD, "curie")]))
    assert "The correct answer" not in next(t for t in server.texts() if verify(A) in t)


def test_sentence_granularity_and_other_constants(judge, store, tokenizer):
    reward = RLFHReward(tokenizer=tokenizer, judge=judge, store=store,
                        settings=RLFHSettings.from_mapping(granularity="sentence", constants="train_sh"))
    out = reward(**batch(tokenizer, [(C_GOOD, "curie")]))
    s0 = "Marie Curie was born in Warsaw in 1867."
    end0 = token_of(tokenizer, C_GOOD, C_GOOD.index(s0) + len(s0) - 1)
    # train_sh: V correct 0.3, vague -0.8; I 5 -> 1.3, 3 -> 1.1; w 1
    assert out.token_returns[0][end0] == pytest.approx(0.3 * 1.3 - 0.8 * 1.1 + math.log(1.3 + 1.1 + 1))
    assert sum(v != 0 for v in out.token_returns[0]) == 2
    assert out.diagnostics["located_share"] == 0.0


def test_failures_over_the_share_stop_the_step(store, tokenizer):
    from factrl.harness.judge import open_judge

    with JudgeServer({"Sentences:": "500"}) as srv, open_judge(judge_cfg(srv.url)) as judge:
        reward = RLFHReward(tokenizer=tokenizer, judge=judge, store=store)
        with pytest.raises(JudgeFailuresExceeded, match=r"2 of 2 items failed.*judge.max_failed_share=0.5"):
            reward(**batch(tokenizer, [(C_GOOD, "curie"), (C_WRONG, "curie")]))


def test_a_cut_reasoning_after_the_prompts_prefix_is_judged(server, judge, store, tokenizer):
    """SmolLM2's prompt ends with "<think>": a completion cut before "</think>" is reasoning."""
    cut = "Marie Curie was born in Warsaw in 1867. She won two Nobel Prizes. And then"
    reward = RLFHReward(tokenizer=tokenizer, judge=judge, store=store, prefix="<think>")
    out = reward(**batch(tokenizer, [(cut, "curie")]))
    assert out.diagnostics["statements"] == 3.0 and out.token_returns[0] is not None
    s0 = "Marie Curie was born in Warsaw in 1867."
    assert out.token_returns[0][token_of(tokenizer, cut, cut.index(s0) + lcs_end(A, s0))] == pytest.approx(0.5625)
