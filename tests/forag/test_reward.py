"""FoRAG's reward on hand-made completions: the real judge client against a scripted judge
server on 127.0.0.1 (tests/knowrl/judge_server.py), a real evidence store and the real SmolLM2
tokenizer. Token positions are read off the tokenizer's own offsets, independently of the
alignment code, so every expected placement is hand-checkable:

C_CURIE tokens:  3 'Marie' 4 ' Cur' 5 'ie' 6 ' was' 7 ' born' 8 ' in' 9 ' Warsaw' 10 '.'
                 11 ' She' ... 16 'rizes' 17 '.' 18 '</' ... 23 'W' 24 'ars' 25 'aw' 26 '</' ...
"""
from __future__ import annotations

import pytest

from factrl.harness.services.judge.stats import JudgeFailuresExceeded
from factrl.methods.forag.reward import DIAGNOSTIC_KEYS, FoRAGReward
from factrl.methods.forag.settings import FoRAGSettings
from tests.knowrl.judge_server import JudgeServer

from .conftest import ROWS, judge_cfg

C_CURIE = "<think>Marie Curie was born in Warsaw. She won two Nobel Prizes.</think><answer>Warsaw</answer>"
C_PARIS = "<think>Marie Curie was born in Paris.</think><answer>Paris</answer>"
C_NOWHERE = "<think>Hamlet was written by Marlowe.</think><answer>Marlowe</answer>"
C_PARTIAL = "<think>Marie Curie liked cats.</think><answer>Warsaw</answer>"  # first split unreadable: no signal
C_LOST = "<think>Curie was clever.</think>"  # its only split unreadable: no signal
C_NOTHING = "<think>I am not sure.</think><answer>I don't know</answer>"  # NO_CLAIMS
C_VERDICT = "<think>Marie Curie discovered radium.</think>"  # its verdict unreadable

BORN = "Marie Curie was born in Warsaw."
SCRIPT = {
    # DECOMPOSE items carry the sentence after "Sentence to split: " (the server unwraps material)
    "Sentence to split: Marie Curie was born in Warsaw.\n": f"- {BORN}",
    "Sentence to split: She won two Nobel Prizes.\n": "- Marie Curie won two Nobel Prizes.\n- Marie Curie won a Nobel Prize.\n"
                                           "- Marie Curie won the Nobel Prize in Literature.",
    "Sentence to split: Warsaw\n": f"- {BORN}",
    "Sentence to split: Marie Curie was born in Paris.\n": "- Marie Curie was born in Paris.",
    "Sentence to split: Paris\n": "- Marie Curie was born in Paris.",
    "Sentence to split: Marie Curie liked cats.\n": "Sure! Here are the claims: cats.",  # never a list, re-ask included
    "Sentence to split: Curie was clever.\n": "1. Curie was clever",
    "Sentence to split: I am not sure.\n": "NO_CLAIMS",
    "Sentence to split: I don't know\n": "NO_CLAIMS",
    "Sentence to split: Yes.\n": "NO_CLAIMS",
    "Sentence to split: Marie Curie discovered radium.\n": "- Marie Curie discovered radium.",
    # VERIFY items end with the claim
    f"Claim: {BORN}": "SUPPORTED",
    "Claim: Marie Curie won two Nobel Prizes.": "SUPPORTED",
    "Claim: Marie Curie won a Nobel Prize.": "**Supported**",
    "Claim: Marie Curie won the Nobel Prize in Literature.": "NOT_SUPPORTED",
    "Claim: Marie Curie was born in Paris.": "Verdict: NOT SUPPORTED.",
    "Claim: Marie Curie discovered radium.": "Probably supported, it sounds right.",
}


def encode(tokenizer, texts):
    return [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]


def last_token_of(tokenizer, text: str, piece: str, occurrence: int = 0) -> int:
    """Index of the last token overlapping the `occurrence`-th `piece` of text (tokenizer offsets)."""
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(piece, start + 1)
    end = start + len(piece)
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return max(t for t, (a, b) in enumerate(offsets) if a < end and b > start)


def batch(tokenizer, pairs):
    texts = [c for c, _ in pairs]
    return {"completions": texts, "completion_ids": encode(tokenizer, texts), "rows": [ROWS[r] for _, r in pairs],
            "prompts": [ROWS[r]["question"] for _, r in pairs]}


@pytest.fixture()
def server():
    with JudgeServer(SCRIPT, default="NO_CLAIMS") as srv:
        yield srv


@pytest.fixture()
def judge(server):
    from factrl.harness.services.judge import open_judge

    with open_judge(judge_cfg(server.url)) as opened:
        yield opened


def make(tokenizer, judge, store, **settings):
    return FoRAGReward(tokenizer=tokenizer, judge=judge, store=store, settings=FoRAGSettings.from_mapping(**settings), k=3)


def expected(n, placed):
    out = [0.0] * n
    for t, v in placed.items():
        out[t] += v
    return out


def test_rewards_land_on_sentence_end_tokens(server, judge, store, tokenizer):
    data = batch(tokenizer, [(C_CURIE, "curie"), (C_PARIS, "curie"), (C_NOWHERE, "nowhere"),
                             (C_PARTIAL, "curie"), (C_LOST, "curie"), (C_NOTHING, "curie"), (C_VERDICT, "curie")])
    out = make(tokenizer, judge, store)(**data)
    ids = data["completion_ids"]
    # hand-read positions (module docstring) and the tokenizer's offsets agree
    assert [last_token_of(tokenizer, C_CURIE, p) for p in (BORN, "She won two Nobel Prizes.")] == [10, 17]
    assert last_token_of(tokenizer, C_CURIE, "Warsaw", 1) == 25
    want = {
        0: {10: 1.0, 17: (1 + 1 - 1) / 3, 25: 1.0},  # mean of the sentence's sub-claims
        1: {last_token_of(tokenizer, C_PARIS, "Marie Curie was born in Paris."): -1.0,
            last_token_of(tokenizer, C_PARIS, "Paris", 1): -1.0},
    }
    for b, placed in want.items():
        assert out.token_returns[b] == pytest.approx(expected(len(ids[b]), placed)), b
    assert out.token_returns[2] is None  # no evidence for the row: no signal, no judge call
    assert out.token_returns[3] is None  # one split failed: no signal (never the rest's partial value)
    assert out.token_returns[4] is None  # every split failed: no signal, never a made-up value
    assert out.token_returns[5] == [0.0] * len(ids[5])  # nothing claimed: nothing rewarded
    assert out.token_returns[6] is None  # its only verdict was unreadable
    d = out.diagnostics
    assert tuple(d) == DIAGNOSTIC_KEYS and all(isinstance(v, float) for v in d.values())
    assert d["sentences"] == 11.0  # 3 + 2 + 2 + 1 + 2 + 1 (the no-evidence row is not split)
    assert d["subclaims"] == 9.0 and d["decompose_failed"] == 2.0 and d["verify_failed"] == 1.0
    assert d["judge_failed"] == 3.0 and d["parse_failures"] == 3.0
    assert d["judge_items"] == 11.0 + 8.0  # C_PARTIAL's sub-claim is not asked once its other split failed
    assert d["no_evidence"] == 1.0 and d["no_claims"] == 1.0 and d["no_signal_judge"] == pytest.approx(3 / 7)
    assert d["supported_share"] == pytest.approx(4 / 7)  # of the 7 verified sub-claims
    assert d["subclaims_per_completion"] == pytest.approx((5 + 2 + 0 + 1) / 4)  # C_CURIE, C_PARIS, C_NOTHING, C_VERDICT
    assert d["duplicate_subclaims"] == 2.0 and d["guard_clipped"] == 0.0  # both answers repeat their think; guards off
    assert d["rewarded_tokens"] == 5.0 and d["alignment_fallback"] == 0.0 and d["unplaced"] == 0.0
    assert d["reward_mean"] == pytest.approx((1 + 1 / 3 + 1 - 2 + 0) / 3)
    claims = [r for r in out.records if r["completion"] == 0]
    assert [r["claim"] for r in claims][:2] == [BORN, "Marie Curie won two Nobel Prizes."]
    assert any(r["error"] == "split failed" and r["completion"] == 3 for r in out.records)
    # identical sub-claims are asked once (the batch's duplicates share one verdict)
    assert sum(f"Claim: {BORN}" in t for t in server.texts()) == 1
    assert not any("Marlowe" in t for t in server.texts())


def test_judge_sees_context_question_and_evidence(server, judge, store, tokenizer):
    make(tokenizer, judge, store)(**batch(tokenizer, [(C_CURIE, "curie")]))
    texts = server.texts()
    split = next(t for t in texts if "Sentence to split: She won two Nobel Prizes.\n" in t)
    assert "Question: Where was Marie Curie born?" in split
    assert f"Earlier sentences of the answer:\n1. {BORN}\nSentence to split:" in split  # so "She" can be resolved
    verify = next(t for t in texts if "Claim: Marie Curie won two Nobel Prizes." in t)
    assert "Marie Curie won two Nobel Prizes." in verify.split("Evidence:")[1].split("Claim:")[0]
    assert "Albert Einstein" not in verify  # only the row's own article


@pytest.mark.parametrize("settings, placed", [
    ({"aggregation": "sum"}, {10: 1.0, 17: 1.0, 25: 1.0}),  # sub-claim granularity: +1 +1 -1 at 17
    ({"placement": "final_token"}, {28: (1 + 1 + 1 - 1 + 1) / 5}),  # one mean, on the last token
    ({"placement": "final_token", "aggregation": "sum"}, {28: 3.0}),
])
def test_other_granularities(server, judge, store, tokenizer, settings, placed):
    data = batch(tokenizer, [(C_CURIE, "curie")])
    out = make(tokenizer, judge, store, **settings)(**data)
    assert out.token_returns[0] == pytest.approx(expected(len(data["completion_ids"][0]), placed))


def test_spread_keeps_each_sentence_sum(server, judge, store, tokenizer):
    data = batch(tokenizer, [(C_CURIE, "curie")])
    rewards = make(tokenizer, judge, store, placement="spread")(**data).token_returns[0]
    assert sum(rewards[3:11]) == pytest.approx(1.0) and len(set(rewards[3:11])) == 1  # 'Marie' .. '.'
    assert sum(rewards[11:18]) == pytest.approx(1 / 3)
    assert sum(rewards[23:26]) == pytest.approx(1.0)  # 'W' 'ars' 'aw'
    assert rewards[:3] == [0.0] * 3 and rewards[18:23] == [0.0] * 5  # tags carry nothing


def test_unusable_alignment_falls_back_to_the_final_token(server, judge, store, tokenizer):
    # whitespace tokens between the two sentences are in the section but in no sentence: 14% of
    # the section's tokens align, under docs/PROTOCOL.md §1's 50%, so the sentence reward cannot be placed
    # and the completion's sub-claims go, aggregated, to its last token (counted)
    gappy = f"<think>{BORN}" + " \u3000 \t" * 12 + "Yes.</think>"
    data = {"completions": [gappy], "completion_ids": encode(tokenizer, [gappy]), "rows": [ROWS["curie"]]}
    n = len(data["completion_ids"][0])
    out = make(tokenizer, judge, store)(**data)
    assert out.diagnostics["alignment_fallback"] == 1.0
    assert out.token_returns[0] == pytest.approx(expected(n, {n - 1: 1.0}))
    placed = make(tokenizer, judge, store, alignment_threshold=0.1)(**data)
    assert placed.diagnostics["alignment_fallback"] == 0.0
    assert placed.token_returns[0] == pytest.approx(expected(n, {last_token_of(tokenizer, gappy, BORN): 1.0}))


def test_failures_over_the_share_stop_the_step(store, tokenizer):
    from factrl.harness.services.judge import open_judge

    with JudgeServer({"Sentence to split:": "500"}) as srv, open_judge(judge_cfg(srv.url, max_failed_share=0.5)) as judge:
        with pytest.raises(JudgeFailuresExceeded, match=r"3 of 3 items failed.*judge.max_failed_share=0.5"):
            make(tokenizer, judge, store)(**batch(tokenizer, [(C_CURIE, "curie")]))


C_MIXED = ("<think>Marie Curie was born in Warsaw. She won two Nobel Prizes. "
           "Marie Curie was born in Paris.</think>")  # +1, +1, -1: return 1.0 with every item read


@pytest.mark.parametrize("fault", [
    None,
    "Claim: Marie Curie was born in Paris.",  # the verdict of the false sub-claim fails (HTTP 500)
    "Sentence to split: Marie Curie was born in Paris.\n",  # the split of the false sentence fails
])
def test_one_failed_item_gives_no_signal_never_a_higher_return(store, tokenizer, fault):
    """docs/CONTRACTS.md "Reward failure rule": dropping only the failed item would raise this
    completion's return from 1.0 to 2.0 (its -1 lost, its +1s kept); it has no signal instead."""
    from factrl.harness.services.judge import open_judge

    script = {**SCRIPT, "Sentence to split: She won two Nobel Prizes.\n": "- Marie Curie won two Nobel Prizes.",
              **({fault: "500"} if fault else {})}
    with JudgeServer(script, default="NO_CLAIMS") as srv, open_judge(judge_cfg(srv.url)) as judge:
        out = make(tokenizer, judge, store)(**batch(tokenizer, [(C_MIXED, "curie")]))
    d = out.diagnostics
    if fault is None:
        assert sum(out.token_returns[0]) == pytest.approx(1.0)
        assert d["judge_failed"] == 0.0 and d["no_signal_judge"] == 0.0
        return
    assert out.token_returns == [None]
    assert d["judge_failed"] == 1.0 and d["no_signal_judge"] == 1.0 and d["reward_mean"] == 0.0
    failed = [r for r in out.records if r["error"]]
    assert len(failed) == 1 and "Paris" in failed[0]["sentence"]
