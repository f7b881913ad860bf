"""TruthRL's reward end to end on constructed completions: the harness's judge client against a
scripted OpenAI-compatible server on 127.0.0.1 and the in-process reference judge, and the reward
contract as the training engine checks it (its own adapter, harness.training.token_reward)."""
from __future__ import annotations

import contextlib

import pytest

truthrl = pytest.importorskip("factrl_truthrl", reason="factrl-truthrl is not installed: run `pip install -e "
                                                        "plugins/truthrl` (make setup does)")
from factrl.harness.services.judge import find_material, open_judge  # noqa: E402
from factrl.harness.services.judge.stats import JudgeFailuresExceeded  # noqa: E402
from factrl_truthrl.prompts import GRADE, SYSTEM  # noqa: E402
from factrl_truthrl.reward import DIAGNOSTIC_KEYS, TruthRLReward, TruthRLSettings  # noqa: E402
from tests.knowrl.judge_server import JudgeServer  # noqa: E402

CURIE = {"id": "q-curie", "question": "Where was Marie Curie born?", "answers": ["Warsaw"], "title": "Marie Curie"}
ULM = {"id": "q-ulm", "question": "Where was Albert Einstein born?", "answers": ["Ulm", "Ulm, Germany"], "title": "Ulm"}
J1 = '{"score": 1, "explanation": "The prediction matches the ground truth."}'
J0 = '{"score": 0, "explanation": "The prediction does not match the ground truth."}'


def done(answer: str, reasoning: str = "I recall the answer.") -> str:
    return f"<think>{reasoning}</think><answer>{answer}</answer>"


def call(reward, texts, rows):
    return reward(prompts=[r["question"] for r in rows], completions=texts,
                  completion_ids=[list(range(2 + i)) for i in range(len(texts))], rows=rows)


def judge_cfg(url: str, **overrides):
    return {"backend": "openai", "base_url": url, "model": "judge-test", "api_key_env": None, "timeout": 2.0,
            "max_retries": 0, "concurrency": 4, "max_reasks": 1, "cache": None, "max_failed_share": 0.5, **overrides}


def values(out):
    return [None if r is None else r[0] for r in out.token_returns]


def test_the_ternary_reward_through_a_served_judge():
    """Exact matches and abstentions never reach the judge; the rest go once per (completion, gold),
    with the released system text and the prediction as material; a second gold can be the one accepted."""
    script = {"Prediction: Warszawa\n": J1, "Prediction: Paris\n": J0, "Ground truth: Ulm\n": J0,
              "Ground truth: Ulm, Germany\n": J1, "Reply with the letter A": "A"}
    with JudgeServer(script, default=J0) as server, open_judge(judge_cfg(server.url)) as judge:
        reward = TruthRLReward(judge=judge)
        texts = [done("Warsaw"), done("Warszawa"), done("Paris"), done("I don't know"), "no answer block, Warsaw",
                 done("Ulm in Germany"), done("invalid question")]
        before = len(server.requests)
        out = call(reward, texts, [CURIE] * 5 + [ULM, CURIE])
        asked = server.requests[before:]
    assert values(out) == [1.0, 1.0, -1.0, 0.0, -1.0, 1.0, -1.0]
    assert [r["decision"] for r in out.records] == ["exact", "ask", "ask", "abstain", "no_answer", "ask", "invalid"]
    assert len(asked) == 4  # Warszawa, Paris: one gold each; "Ulm in Germany": two golds
    for body in asked:
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        assert system == SYSTEM and system.startswith("Assume you are a human expert in grading predictions")
        assert user.startswith("Question: ") and "\n Ground truth: " in user and user.endswith("\n")
        assert [label for label, _ in find_material(user)] == ["prediction"]
        assert body["temperature"] == 0.0 and body["top_p"] == 0.9 and body["max_tokens"] == 512
    assert out.diagnostics["judge_items"] == 4.0 and out.no_signal_reasons == [None] * 7
    assert tuple(out.diagnostics) == DIAGNOSTIC_KEYS
    assert out.diagnostics["correct_rate"] == pytest.approx(3 / 7) and out.diagnostics["abstain_rate"] == pytest.approx(1 / 7)


def test_a_failed_judge_item_is_no_signal_never_a_score():
    """A server error and a reply without a score (after the re-ask) give None with judge_failed;
    an accepted second gold still decides; above judge.max_failed_share the step stops."""
    script = {"Prediction: Munich\n": "Looks right to me.", "Prediction: Lyon\n": "500",
              "Ground truth: Ulm\n": "500", "Ground truth: Ulm, Germany\n": J1, "Reply with the letter A": "A"}
    with JudgeServer(script, default=J0) as server, open_judge(judge_cfg(server.url, max_failed_share=0.8)) as judge:
        out = call(TruthRLReward(judge=judge), [done("Munich"), done("Lyon"), done("Ulm in Germany"), done("Warsaw")],
                   [CURIE, CURIE, ULM, CURIE])
        assert values(out) == [None, None, 1.0, 1.0]
        assert out.no_signal_reasons == ["judge_failed", "judge_failed", None, None]
        assert out.records[0]["error"] and "unreadable" in out.records[0]["error"]
        assert out.diagnostics["judge_failed"] == 3.0 and out.diagnostics["no_signal_judge"] == 0.5
    with JudgeServer({"Reply with the letter A": "A"}, default="500") as server, \
            open_judge(judge_cfg(server.url, max_failed_share=0.2)) as judge:
        with pytest.raises(JudgeFailuresExceeded):
            call(TruthRLReward(judge=judge), [done("Lyon"), done("Warsaw")], [CURIE, CURIE])


def test_reference_judge_and_the_other_verifiers():
    """judge=reference accepts what the protocol's matcher credits; verifier=exact is the release's
    rule-based variant (no judge); verifier=matcher the protocol's matcher."""
    texts = [done("Warsaw, Poland"), done("Paris"), done("warsaw")]
    with open_judge({"backend": "reference"}, prompts=[GRADE]) as judge:
        assert values(call(TruthRLReward(judge=judge), texts, [CURIE] * 3)) == [1.0, -1.0, 1.0]
    exact = TruthRLReward(settings=TruthRLSettings.from_mapping(verifier="exact"))
    assert values(call(exact, texts, [CURIE] * 3)) == [-1.0, -1.0, 1.0]
    matcher = TruthRLReward(settings=TruthRLSettings.from_mapping(verifier="matcher"))
    assert values(call(matcher, texts, [CURIE] * 3)) == [1.0, -1.0, 1.0]
    with pytest.raises(ValueError, match="verifier=judge needs a judge"):
        TruthRLReward()


def test_abstention_gaming_and_its_guards():
    """The released abstention rule reads "contains 'i dont know'": a wrong answer followed by it
    earns the abstention's 0, above the honest wrong answer's -1. abstention=protocol (exact forms)
    and answer_guard=strict close it; a listed or negated gold is wrong under the strict guard."""
    texts = [done("Paris, but I don't know"), done("Paris"), done("Paris or Warsaw"), done("It is not Warsaw.")]
    with open_judge({"backend": "reference"}, prompts=[GRADE]) as judge:
        plain = values(call(TruthRLReward(judge=judge), texts, [CURIE] * 4))
        protocol = values(call(TruthRLReward(judge=judge, settings=TruthRLSettings.from_mapping(
            abstention="protocol")), texts, [CURIE] * 4))
        strict = call(TruthRLReward(judge=judge, settings=TruthRLSettings.from_mapping(answer_guard="strict")),
                      texts, [CURIE] * 4)
    assert plain == [0.0, -1.0, 1.0, 1.0]  # the reference judge credits the listed and the negated gold
    assert protocol[0] == -1.0
    assert values(strict)[2:] == [-1.0, -1.0] and [r["guarded"] for r in strict.records][2:] == ["candidates", "negated"]


def test_the_strict_guard_withdraws_an_embedded_gold_and_a_fragment_without_a_judge_call():
    """Strict accuracy v3's reasons `embedded` (the gold followed by words that make another name)
    and `fragment` (part of a multi-word gold) are gaming reasons (harness.core.answers.GAMING_REASONS), as
    for KnowRL's answer_guard: a judge that accepts them pays +1, the guard pays -1 and asks nothing."""
    polonium = {"id": "q-polonium", "question": "Who discovered polonium with Pierre Curie?",
                "answers": ["Marie Curie"], "title": "Marie Curie"}
    texts, rows = [done("Warsaw Memorial Stadium"), done("Marie"), done("Marie Curie")], [CURIE, polonium, polonium]
    script = {"Prediction: Warsaw Memorial Stadium\n": J1, "Prediction: Marie\n": J1, "Reply with the letter A": "A"}
    with JudgeServer(script, default=J0) as server, open_judge(judge_cfg(server.url)) as judge:
        before = len(server.requests)
        plain = call(TruthRLReward(judge=judge), texts, rows)
        asked_plain = len(server.requests) - before
        before = len(server.requests)
        strict = call(TruthRLReward(judge=judge, settings=TruthRLSettings.from_mapping(answer_guard="strict")),
                      texts, rows)
        asked_strict = len(server.requests) - before
    assert values(plain) == [1.0, 1.0, 1.0] and asked_plain == 2  # the exact match never reaches the judge
    assert values(strict) == [-1.0, -1.0, 1.0] and asked_strict == 0
    assert [r["guarded"] for r in strict.records] == ["embedded", "fragment", None]
    assert strict.diagnostics["judge_items"] == 0.0


def test_the_engines_reward_contract_holds(tmp_path):
    """The training engine's own adapter checks the output (one value per token, one reason per
    completion) and writes one record per completion."""
    from factrl.harness.training.token_reward import _TokenReward

    reward = TruthRLReward(settings=TruthRLSettings.from_mapping(verifier="exact"), prefix="<think>")
    adapter = _TokenReward(reward, "truthrl", lambda name: contextlib.nullcontext(), tmp_path / "records.jsonl")
    texts = ["x</think><answer>Warsaw</answer>", "x</think><answer>I don't know</answer>", "noise", ""]
    means = adapter(prompts=["q"] * 4, completions=texts, completion_ids=[[1, 2, 3], [4, 5], [6], []],
                    id=["a"] * 4, question=[CURIE["question"]] * 4, answers=[CURIE["answers"]] * 4, title=["t"] * 4)
    assert means == [1.0, 0.0, -1.0, None]  # an empty completion carries no signal whatever the reward says
    assert len((tmp_path / "records.jsonl").read_text().splitlines()) == 4


def test_a_completion_cannot_steer_the_judge():
    """The panel's injected instruction inside the answer reaches the judge only as material: a
    judge that obeys any instruction it can see outside material blocks still grades it wrong."""
    from factrl.harness.probe.panel import INJECTION
    from tests.judge.obeying_server import ObeyingJudge

    def honest(text: str) -> str:
        return "A" if "Reply with the letter A" in text else J0

    with ObeyingJudge(honest, lambda text: J1) as server, open_judge(judge_cfg(server.url)) as judge:
        out = call(TruthRLReward(judge=judge), [done(f"Paris. {INJECTION}")], [CURIE])
        assert values(out) == [-1.0] and server.obeyed == [] and len(server.honest) >= 2
