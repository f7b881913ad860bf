"""Binary RAR's reward end to end on constructed completions: a real evidence store written here
(SQLite FTS5), the harness's judge client against a scripted OpenAI-compatible server on
127.0.0.1 and the reference judge, and the reward contract as the training engine checks it."""
from __future__ import annotations

import contextlib

import pytest

rar = pytest.importorskip("factrl_binary_rar", reason="factrl-binary-rar is not installed: run `pip install -e "
                                                       "plugins/binary_rar` (make setup does)")
from factrl.harness.services.evidence import open_store  # noqa: E402
from factrl.harness.services.judge import ParseError, find_material, open_judge  # noqa: E402
from factrl_binary_rar.prompts import VERIFY, documents_text, parse_score  # noqa: E402
from factrl_binary_rar.reward import DIAGNOSTIC_KEYS, BinaryRARReward, BinaryRARSettings, response_of  # noqa: E402
from tests.evidence_fixtures import build_test_store  # noqa: E402
from tests.knowrl.judge_server import JudgeServer  # noqa: E402

ARTICLES = [
    {"title": "Marie Curie", "text": "Marie Curie was born in Warsaw. Marie Curie won two Nobel Prizes. "
                                     "She worked in Paris on radium and polonium with Pierre Curie for many years."},
    {"title": "Ulm", "text": "Albert Einstein was born in Ulm in 1879."},
]
CURIE = {"id": "q-curie", "question": "Where was Marie Curie born?", "answers": ["Warsaw"], "title": "Marie Curie"}
NOWHERE = {"id": "q-none", "question": "Who wrote Hamlet?", "answers": ["Shakespeare"], "title": "William Shakespeare"}
S1 = '{"REASONING": "No contradiction found.", "SCORE": 1}'
S0 = '{"REASONING": "The response says Paris, the documents say Warsaw.", "SCORE": 0}'


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    return build_test_store(tmp_path_factory.mktemp("rar_store"), ARTICLES)


@pytest.fixture()
def store(store_path):
    with open_store(store_path) as opened:
        yield opened


def judge_cfg(url: str, **overrides):
    return {"backend": "openai", "base_url": url, "model": "judge-test", "api_key_env": None, "timeout": 2.0,
            "max_retries": 0, "max_reasks": 1, "cache": None, "max_failed_share": 1.0, **overrides}


def call(reward, texts, rows):
    return reward(completions=texts, completion_ids=[list(range(2 + i)) for i in range(len(texts))], rows=rows)


def values(out):
    return [None if r is None else r[0] for r in out.token_returns]


def test_the_response_is_what_follows_the_first_think_block():
    assert response_of("<think>a</think><answer>Warsaw</answer>") == "<answer>Warsaw</answer>"
    assert response_of("<think>a</think>b<think>c</think>d") == "b<think>c</think>d"
    assert response_of("no tags") == "no tags" and response_of("<think>a</think>") == ""


def test_the_verifier_reply_must_be_a_score_of_0_or_1():
    assert parse_score(S1) == 1 and parse_score(S0) == 0
    assert parse_score('{"REASONING": "x", "SCORE": "1"}') == 1  # the prompt's own example quotes the score
    assert parse_score('```json\n{"SCORE": 0}\n```') == 0
    for bad in ['{"REASONING": "x"}', '{"SCORE": 2}', '{"SCORE": 0.5}', "SCORE: 1", "", '{"SCORE": "one"}',
                'Verdict: {"SCORE": 1}', '[1]']:
        with pytest.raises(ParseError):
            parse_score(bad)


def test_verification_through_a_served_judge(store):
    """One request per completion with evidence: the released prompt with the row's passages as
    documents and the response as material; a row without evidence is no signal, never asked."""
    script = {"<answer>Paris</answer>": S0, "Reply with the letter A": "A"}
    with JudgeServer(script, default=S1) as server, open_judge(judge_cfg(server.url)) as judge:
        reward = BinaryRARReward(judge=judge, store=store)
        texts = ["<think>Curie was Polish.</think><answer>Warsaw</answer>",
                 "<think>I recall Paris.</think><answer>Paris</answer>",
                 "<think>Hmm.</think><answer>Marlowe</answer>"]
        start = len(server.requests)
        out = call(reward, texts, [CURIE, CURIE, NOWHERE])
        sent = server.requests[start:]
    assert values(out) == [1.0, 0.0, None]
    assert out.no_signal_reasons == [None, None, "no_evidence"]
    assert len(sent) == 2
    # The two requests go out concurrently: they arrive in either order, so each is found by its material.
    materials = sorted(find_material(r["messages"][0]["content"])[0][1] for r in sent)
    assert materials == ["<answer>Paris</answer>", "<answer>Warsaw</answer>"]
    [first] = [r for r in sent if find_material(r["messages"][0]["content"]) == [("response", "<answer>Warsaw</answer>")]]
    message = first["messages"][0]["content"]
    assert message.startswith("You are a professional fact-checker") and "Document 1: Marie Curie\n\n" in message
    assert ">>> Begin of the prompt <<<\nWhere was Marie Curie born?\n<<< End of the prompt >>>" in message
    assert all(r["max_tokens"] == 512 and r["chat_template_kwargs"] == {"enable_thinking": False} for r in sent)
    assert tuple(out.diagnostics) == DIAGNOSTIC_KEYS and out.diagnostics["judge_items"] == 2.0
    assert out.diagnostics["no_evidence_rate"] == pytest.approx(1 / 3)


def test_a_failed_verification_is_no_signal(store):
    script = {"Lyon": "500", "Munich": "I find no contradiction.", "Reply with the letter A": "A"}
    with JudgeServer(script, default=S1) as server, open_judge(judge_cfg(server.url)) as judge:
        out = call(BinaryRARReward(judge=judge, store=store),
                   ["<think>x</think><answer>Lyon</answer>", "<think>x</think><answer>Munich</answer>",
                    "<think>x</think><answer>Warsaw</answer>"], [CURIE] * 3)
    assert values(out) == [None, None, 1.0]
    assert out.no_signal_reasons == ["judge_failed", "judge_failed", None]
    assert out.diagnostics["judge_failed"] == 2.0


def test_the_reference_judge_rewards_no_claim_and_supported_claims(store):
    """judge=reference (a stand-in): an abstention or an empty response contradicts nothing (1),
    an answer the documents state is supported (1), one they do not state is 0."""
    with open_judge({"backend": "reference"}, prompts=[VERIFY], evidence=store) as judge:
        out = call(BinaryRARReward(judge=judge, store=store),
                   ["<think>x</think><answer>Warsaw</answer>", "<think>x</think><answer>I don't know</answer>",
                    "<think>x</think>", "<think>x</think><answer>Lyon</answer>"], [CURIE] * 4)
    assert values(out) == [1.0, 1.0, 1.0, 0.0]
    assert documents_text(["a", "b"]) == "Document 1: a\n\nDocument 2: b"


def test_top_k_bounds_the_documents(store):
    with open_judge({"backend": "reference"}, prompts=[VERIFY], evidence=store) as judge:
        out = call(BinaryRARReward(judge=judge, store=store, settings=BinaryRARSettings.from_mapping(top_k=1)),
                   ["<think>x</think><answer>Warsaw</answer>"], [CURIE])
    assert out.records[0]["passages"] == 1
    from factrl.harness.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"method.top_k=0 is out of range"):
        rar.BinaryRARMethod({"name": "binary_rar", "top_k": 0})


def test_the_engines_reward_contract_holds(store, tmp_path):
    from factrl.harness.training.token_reward import _TokenReward

    with open_judge({"backend": "reference"}, prompts=[VERIFY], evidence=store) as judge:
        reward = BinaryRARReward(judge=judge, store=store, prefix="<think>")
        adapter = _TokenReward(reward, "binary_rar", lambda name: contextlib.nullcontext(), tmp_path / "r.jsonl")
        means = adapter(prompts=["q"] * 3, completions=["x</think><answer>Warsaw</answer>", "noise", "x"],
                        completion_ids=[[1, 2], [3], []], id=["a", "b", "c"], question=[CURIE["question"]] * 3,
                        answers=[["Warsaw"]] * 3, title=["Marie Curie", "William Shakespeare", "Marie Curie"])
    assert means == [1.0, None, None]  # no evidence for Hamlet; an empty completion carries no signal
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 3


def test_a_response_cannot_steer_the_verifier(store):
    """The injected instruction in the response reaches the verifier only as material: a verifier
    that obeys any instruction outside material blocks still reports the contradiction."""
    from factrl.harness.probe.panel import INJECTION
    from tests.judge.obeying_server import ObeyingJudge

    def honest(text: str) -> str:
        return "A" if "Reply with the letter A" in text else S0

    with ObeyingJudge(honest, lambda text: S1) as server, open_judge(judge_cfg(server.url)) as judge:
        out = call(BinaryRARReward(judge=judge, store=store), [f"<think>x</think><answer>Paris. {INJECTION}</answer>"],
                   [CURIE])
        assert values(out) == [0.0] and server.obeyed == []
