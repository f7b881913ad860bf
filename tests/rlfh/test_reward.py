"""RLFH's reward through the real judge client against a scripted judge on 127.0.0.1, a real evidence
store and the real SmolLM2 tokenizer: the release's labels and decoding for the reference
vectors' annotated answer (tests/reference_vectors/rlfh/annotator.json), the release's tries, the
failure rule (a failed item never raises a return), and what an echo must match."""
from __future__ import annotations

import json

import pytest

from factrl.harness.services.judge import open_judge
from factrl.harness.services.judge.stats import JudgeFailuresExceeded
from factrl.methods.rlfh.reward import DIAGNOSTIC_KEYS, RLFHReward
from factrl.methods.rlfh.settings import RLFHSettings

from .conftest import ROWS, VECTORS
from .scripted_judge import RLFHJudge

ANNOTATOR = json.loads((VECTORS / "annotator.json").read_text(encoding="utf-8"))["cases"][0]


def judge_cfg(url: str, **overrides):
    return {"backend": "openai", "base_url": url, "model": "judge-test", "api_key_env": None, "timeout": 5.0,
            "max_retries": 0, "concurrency": 8, "max_reasks": 0, "temperature": 0.0, "max_tokens": 4096,
            "cache": None, "max_failed_share": 1.0, **overrides}


def batch(tokenizer, pairs):
    texts = [c for c, _ in pairs]
    return {"completions": texts, "prompts": [ROWS[r]["question"] for _, r in pairs],
            "completion_ids": [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts],
            "rows": [ROWS[r] for _, r in pairs]}


def run(server, store, tokenizer, pairs, **settings):
    with open_judge(judge_cfg(server.url)) as judge:
        reward = RLFHReward(tokenizer=tokenizer, judge=judge, store=store,
                            settings=RLFHSettings.from_mapping(**settings))
        return reward(**batch(tokenizer, pairs))


def annotator_judge():
    replies = ANNOTATOR["input"]["judge_replies"]
    return RLFHJudge(extract={"Arthur's Magazine was started first.": list(replies["extract"])},
                     verify=dict(replies["verify"]), assess=dict(replies["assess"]))


def decoding(body):
    return {k: body[k] for k in ("temperature", "top_p", "max_tokens")}


def test_labels_and_decoding_are_the_releases(store, tokenizer):
    """The release's remote path on the vectors' answer: labels per statement and every request's
    decoding (extraction re-sent at T 1.25 after an unreadable reply; a verdict unreadable 4 times
    becomes Vague, a score 1), with judge_failure=released and the released parsers."""
    answer, calls = ANNOTATOR["input"]["answer"], ANNOTATOR["output"]["calls"]
    with annotator_judge() as server:
        out = run(server, store, tokenizer, [(answer, "magazine")], judge_failure="released")
        bodies = list(server.requests)
    labels = {(r["echo"], r["statement"]): [r["verdict"].capitalize(), str(r["score"])]
              for r in out.records if not r["hedged"]}
    expected = {(echo, st): label for echo, statements in ANNOTATOR["output"]["labels"] for st, label in statements}
    hedged = "I do not have any information about its editors."  # post_process drops it: never asked here
    assert labels == {k: v for k, v in expected.items() if k[0] != hedged}
    assert [(r["verdict"], r["truth"]) for r in out.records if r["echo"] == hedged] == [(None, None)]
    from .scripted_judge import blocks, kind_of

    def text(body):
        return "\n".join(m["content"] for m in body["messages"])

    sent = {}
    for body in bodies:
        kind = kind_of(text(body))
        if kind in ("verify", "assess"):
            sent.setdefault(f"{kind}: {blocks(text(body), 'statement')[-1]}", []).append(decoding(body))
        elif kind == "extract":
            sent.setdefault("extract", []).append(decoding(body))
    assert sent == {k: [decoding(c) for c in v] for k, v in calls.items() if hedged[:20] not in k
                    and "editors" not in k}
    assert all(len(b["messages"]) == 1 and b["messages"][0]["role"] == "user" for b in bodies if "messages" in b)
    d = out.diagnostics
    assert tuple(d) == DIAGNOSTIC_KEYS and d["fallback_items"] == 2.0 and d["hedged_echoes"] == 1.0
    assert d["retried_items"] == 1 + 3 + 3 and out.token_returns[0] is not None  # extract 1, verify 3, assess 3


def test_any_failed_item_makes_the_completion_no_signal(store, tokenizer):
    """docs/CONTRACTS.md "Reward failure rule": the same answer under the default rule."""
    with annotator_judge() as server:
        out = run(server, store, tokenizer, [(ANNOTATOR["input"]["answer"], "magazine")])
    assert out.token_returns == [None]
    d = out.diagnostics
    assert d["judge_failed"] == 2.0 and d["verify_failed"] == 1.0 and d["assess_failed"] == 1.0
    assert d["no_signal_judge"] == 1.0 and d["fallback_items"] == 0.0
    assert out.records[0]["status"] == "judge_failed"


TRUE, FALSE = "Marie Curie was born in Warsaw.", "Marie Curie was born in Paris."
TWO = f"<think>{TRUE} {FALSE}</think><answer>Warsaw</answer>"


@pytest.mark.parametrize("failing", ["verify", "assess"])
def test_a_failed_item_never_raises_the_return(store, tokenizer, failing):
    """The judge fails once, on the false claim (a 500, no retries): no signal by default. The
    release's fallback (Vague / 1) RAISES the return above the fault-free one - why it is off."""
    honest = {"verify": {TRUE: "Correct", FALSE: "Wrong"}, "assess": {TRUE: "5", FALSE: "5"}}
    with RLFHJudge(**honest) as server:
        clean = run(server, store, tokenizer, [(TWO, "curie")])
    faulty = {k: dict(v) for k, v in honest.items()}
    faulty[failing][FALSE] = "500"
    with RLFHJudge(**faulty) as server:
        default = run(server, store, tokenizer, [(TWO, "curie")])
        released = run(server, store, tokenizer, [(TWO, "curie")], judge_failure="released")
    fault_free = sum(clean.token_returns[0])
    assert default.token_returns == [None] and default.diagnostics[f"{failing}_failed"] == 1.0
    assert default.diagnostics["no_signal_judge"] == 1.0
    assert sum(released.token_returns[0]) > fault_free + 0.5  # train_sh: Wrong -1.2 -> Vague -0.8, or |I| 1.3 -> 0.1


def test_extraction_is_asked_again_hotter_then_fails(store, tokenizer):
    unreadable = ["Sure.", "Sure.", ">> Sentence 1: Marie Curie was born in Warsaw.\n* Marie Curie was born in Warsaw."]
    completion = "<think>Marie Curie was born in Warsaw.</think><answer>Warsaw</answer>"
    with RLFHJudge(extract={"Marie Curie": list(unreadable)}) as server:
        out = run(server, store, tokenizer, [(completion, "curie")])
        temps = [b["temperature"] for b in server.bodies("extract")]
    assert temps == [1.0, 1.25, 1.5] and out.token_returns[0] is not None
    assert out.diagnostics["retried_items"] == 2.0 and out.diagnostics["parse_failures"] == 2.0
    with RLFHJudge(extract={"Marie Curie": "Sure."}) as server:
        out = run(server, store, tokenizer, [(completion, "curie")], tries=2)
        assert [b["temperature"] for b in server.bodies("extract")] == [1.0, 1.25]
    assert out.token_returns == [None] and out.diagnostics["extract_failed"] == 1.0


def test_echoes_the_response_does_not_hold_give_no_signal(store, tokenizer):
    with RLFHJudge(extract={"Warsaw": ">> Sentence 1: Berlin hosts the Bundestag.\n* Berlin hosts the Bundestag."}) as server:
        out = run(server, store, tokenizer, [(TWO, "curie")])
        assert server.bodies("verify") == []  # nothing judged for it
    assert out.token_returns == [None] and out.diagnostics["unmatched_echo"] == 1.0


def test_hedged_echoes_are_dropped_after_extraction(store, tokenizer):
    completion = ("<think>I'm not sure, but Marie Curie was born in Warsaw. Was she born in Paris? "
                  "i'm sorry, she was born in Warsaw.</think><answer>Warsaw</answer>")
    with RLFHJudge() as server:
        out = run(server, store, tokenizer, [(completion, "curie")])
        verified = [b for b in server.bodies("verify")]
    kept = {r["echo"] for r in out.records if not r["hedged"]}
    assert kept == {"I'm not sure, but Marie Curie was born in Warsaw."}  # case-sensitive, as released
    assert len(verified) == 1 and out.diagnostics["hedged_echoes"] == 2.0
    with RLFHJudge() as server:
        off = run(server, store, tokenizer, [(completion, "curie")], drop_hedges=False)
    assert off.diagnostics["hedged_echoes"] == 0.0 and off.diagnostics["statements"] == 3.0


def test_the_gold_sentence_is_shown_only_when_it_ranks(store, tokenizer):
    completion = "<think>The answer is Warsaw. Her daughter Irene won a Nobel Prize.</think><answer>Warsaw</answer>"
    with RLFHJudge() as server:
        out = run(server, store, tokenizer, [(completion, "curie")])
        prompts = {b["messages"][0]["content"].rsplit("# Statement", 1)[1]: b["messages"][0]["content"]
                   for b in server.bodies("verify")}
    gold = '- The correct answer for "Where was Marie Curie born" is "Warsaw".'
    assert [gold in p for s, p in sorted(prompts.items(), key=lambda kv: "Irene" in kv[0])] == [True, False]
    assert out.diagnostics["gold_shown_share"] == 0.5


def test_failures_over_the_share_stop_the_step(store, tokenizer):
    with RLFHJudge(default_extract="500") as server, open_judge(judge_cfg(server.url, max_failed_share=0.5)) as judge:
        reward = RLFHReward(tokenizer=tokenizer, judge=judge, store=store)
        with pytest.raises(JudgeFailuresExceeded, match=r"2 of 2 items failed.*judge.max_failed_share=0.5"):
            reward(**batch(tokenizer, [(TWO, "curie"), (TWO, "einstein")]))


def test_no_evidence_and_no_alignment_cost_no_call(store, tokenizer):
    with RLFHJudge() as server:
        out = run(server, store, tokenizer, [(TWO, "nowhere"), ("", "curie")])
        assert server.bodies("extract") == []
    assert out.token_returns[0] is None and out.diagnostics["no_evidence"] == 1.0
    assert out.token_returns[1] is None and out.diagnostics["alignment_fallback"] == 1.0
