"""KnowRL's reward against its release: the harness's reward runs on the inputs of the reference
vectors (tests/reference_vectors/knowrl/, computed by running zjunlp/KnowRL@f75b0bb's own code)
with the vectors' judge replies served by a real scripted server on 127.0.0.1, and its outputs
are compared with the release's. Where the harness differs on purpose (README, Fidelity), the
test names the difference and checks that it is only that."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from factrl.harness.services.judge import find_material, open_judge
from factrl.harness.services.judge.spec import MATERIAL_RULE
from factrl.methods.knowrl.reward import KnowRLReward
from factrl.methods.knowrl.scoring import KnowRLSettings

from .judge_server import JudgeServer
from .test_reward import judge_cfg

VECTORS = Path(__file__).resolve().parents[1] / "reference_vectors" / "knowrl"
README = Path(__file__).resolve().parents[2] / "methods" / "knowrl" / "README.md"
GRADE_VALUE = {"CORRECT": 2.0, "INCORRECT": -1.0, "NOT_ATTEMPTED": 1.0}
NO_EVIDENCE = {"id": "q", "question": "What is the capital of France?", "answers": ["Paris"], "title": "Nowhere"}


def vector(name: str) -> dict:
    return json.loads((VECTORS / f"{name}.json").read_text(encoding="utf-8"))


def cases(name: str) -> dict:
    return {c["name"]: c for c in vector(name)["cases"]}


class TableNLI:
    """The vectors' NLI stand-in: P(entailment) looked up per (passage, fact); a pair the table
    does not hold is an error, so the premise and hypothesis the reward sends are checked too."""

    def __init__(self, rows: list[dict]):
        self.table = {(r["passage"], r["fact"]): float(r["p_entail"]) for r in rows}
        self.pairs: list[tuple[str, str]] = []

    def score(self, pairs):
        self.pairs.extend(pairs)
        return [self.table[pair] for pair in pairs]

    def describe(self):
        return {"kind": "nli", "backend": "table", "label": "vector table"}


def reward_for(server, store, nli, **settings) -> KnowRLReward:
    judge = open_judge(judge_cfg(server.url, max_reasks=0, max_failed_share=1.0))
    return KnowRLReward(judge=judge, store=store, nli=nli, settings=KnowRLSettings.from_mapping(**settings), k=5)


def run(reward, completions, rows):
    try:
        return reward(completions=completions, completion_ids=[[0, 1]] * len(completions), rows=rows)
    finally:
        reward.judge.close()


def graded(answer: str) -> str:
    """The needle of a grade request for `answer` (the scripted server unwraps material)."""
    return f"Predicted answer: {answer}\n---"


# --- the grade: prompt, decoding, parse --------------------------------------------------------

def test_grade_prompt_is_the_released_text_with_the_answer_as_material(store, standin):
    case = cases("grade_parse")["prompt_sent_without_gold"]
    row = {"id": "h", "question": case["input"]["question"], "answers": [], "title": "Nowhere"}
    with JudgeServer(default="A") as server:
        run(reward_for(server, store, standin), [f"<think>r</think><answer>{case['input']['answer']}</answer>"], [row])
        body = next(b for b in server.requests if "Predicted answer" in b["messages"][0]["content"])
    sent = body["messages"][0]["content"]
    assert len(body["messages"]) == 1 and body["messages"][0]["role"] == "user"
    assert find_material(sent) == [("answer", "Shakespeare")]
    # The one change to the released words: the material rule line, and the answer delimited.
    unwrapped = re.sub(r'<material-[0-9a-f]{12} label="answer">(.*?)</material-[0-9a-f]{12}>', r"\1", sent)
    assert unwrapped.replace(MATERIAL_RULE + "\n", "", 1) == case["output"]["prompt"]
    assert (body["temperature"], body["max_tokens"]) == (case["output"]["temperature"], case["output"]["max_tokens"])


def _grade_batch(parse: str, store, standin):
    """One completion per judge reply of grade_parse.json; rows without evidence, so a -1 keeps
    fact 0 and the total is format (+1) + the grade's value."""
    replies = {name: c["input"]["judge_reply"] for name, c in cases("grade_parse").items()
               if "judge_reply" in c["input"] and name != "api_error"}
    script = {graded(f"answer {i}"): reply for i, reply in enumerate(replies.values())}
    script[graded("answer error")] = "500"
    completions = [f"<think>r</think><answer>answer {i}</answer>" for i in range(len(replies))]
    completions.append("<think>r</think><answer>answer error</answer>")
    with JudgeServer(script, default="A") as server:
        out = run(reward_for(server, store, standin, grade_parse=parse), completions, [NO_EVIDENCE] * len(completions))
    names = [*replies, "api_error"]
    return {name: (r[0] if r is not None else None) for name, r in zip(names, out.token_returns)}


def test_released_grade_parse_scores_every_reply_as_the_release(store, standin):
    got = _grade_batch("released", store, standin)
    for name, case in cases("grade_parse").items():
        if name not in got:
            continue
        score = case["output"]["score"]
        if score == 0.0:
            # The release scored an unreadable reply and an API error 0.0; the failure rule: no signal.
            assert got[name] is None, name
        else:
            assert got[name] == pytest.approx(1.0 + score), name


def test_strict_grade_parse_differs_only_by_refusing_replies_that_are_not_a_grade(store, standin):
    got = _grade_batch("strict", store, standin)
    release = cases("grade_parse")
    refused = sorted(name for name, value in got.items() if value is None and release[name]["output"]["score"] != 0.0)
    for name, value in got.items():
        if value is not None:
            assert value == pytest.approx(1.0 + release[name]["output"]["score"]), name
    # The replies strict parsing refuses where the release found a grade; the README's fidelity
    # table lists each (three of them the release read as CORRECT through a stray "A").
    readme = README.read_text(encoding="utf-8")
    assert refused and all(release[name]["input"]["judge_reply"] in readme for name in refused), refused
    assert {release[n]["input"]["judge_reply"] for n in refused if release[n]["output"]["score"] == 2.0} == {
        "Grade: B. A partial answer is incorrect.", "C - a vague answer",
        "INCORRECT. The predicted answer is not CORRECT."}


def test_answer_extraction_and_refusals_as_llm_eval_reward(store, standin):
    case = cases("llm_eval_reward")["batch"]
    script = {}
    for answer, reply in case["input"]["judge_reply_by_answer"].items():
        script[graded(answer)] = "500" if reply.startswith("EXCEPTION") else reply
    rows = [{**NO_EVIDENCE, "question": q, "answers": [g]}
            for q, g in zip(case["input"]["qwestion"], case["input"]["best_answer"])]
    with JudgeServer(script, default="A") as server:
        out = run(reward_for(server, store, standin), case["input"]["completions"], rows)
        sent = [find_material(b["messages"][0]["content"])[0][1] for b in server.requests
                if "Predicted answer" in b["messages"][0]["content"]]
    assert sorted(sent) == sorted(case["output"]["answers_sent_to_judge_in_order"])  # concurrent: any order
    for record, want, refusal in zip(out.records, case["output"]["rewards"], case["output"]["refusal_flags"]):
        if record["answer"] == "boom":  # the judge error: 0.0 released, no signal here
            assert want == 0.0 and record["correctness"] is None and record["total"] is None
            continue
        assert record["correctness"] == want and record["refused"] == refusal


def test_answer_and_fact_text_edges_as_released(store, standin):
    from factrl.methods.knowrl import scoring

    edges = vector("release_edges")["cases"]
    for case in edges["answer"]:
        sent = case["output"]["answer_sent"]
        assert scoring.answer_of(case["input"]["completion"]) == (sent if sent is not None else ""), case["name"]
    for case in edges["fact_text"]:
        assert scoring.reasoning_of(case["input"]["completion"]) == case["output"]["fact_text"], case["name"]


# --- the format reward -------------------------------------------------------------------------

def test_format_reward_vectors_through_the_reward():
    from factrl.harness.services.judge import open_judge as open_any

    inputs = [c for c in vector("format_reward")["cases"]] + vector("release_edges")["cases"]["format"]
    completions = [c["input"]["completion"] for c in inputs]
    with open_any({"backend": "reference"}) as judge:
        reward = KnowRLReward(judge=judge, store=_NoStore(), nli=None, k=5)
        out = reward(completions=completions, completion_ids=[[0]] * len(completions), rows=[NO_EVIDENCE] * len(inputs))
    assert [r["format"] for r in out.records] == [c["output"]["reward"] for c in inputs]


class _NoStore:
    """An evidence store without articles (every row: no evidence, fact 0, no NLI call)."""

    def by_title(self, title, k):
        return []

    def for_row(self, row, query, k):
        return []


# --- facts: parse and the end-to-end reward ----------------------------------------------------

def _released_facts(parsed: list[str]) -> list[str]:
    """What the release scores of a parse (factscorer.py:669-676, the vector's notes): a lone
    entry starting with "NON_FACTUAL:" means no facts, and such entries are dropped."""
    return [f for f in parsed if not f.startswith("NON_FACTUAL:")]


def test_atomic_fact_parse_through_the_reward(store, standin):
    parse_cases = [c for c in vector("atomic_fact_parse")["cases"] if c["input"]["reply"] is not None]
    script = {graded(f"wrong {i}"): "B" for i in range(len(parse_cases))}
    for i, c in enumerate(parse_cases):
        script[f"Text: reasoning number {i}.\nFacts:"] = c["input"]["reply"]
    completions = [f"<think>reasoning number {i}.</think><answer>wrong {i}</answer>" for i in range(len(parse_cases))]
    row = {"id": "c", "question": "Where was Marie Curie born?", "answers": ["Warsaw"], "title": "Marie Curie"}
    with JudgeServer(script, default="A") as server:
        out = run(reward_for(server, store, standin), completions, [row] * len(completions))
    for record, case in zip(out.records, parse_cases):
        assert record["facts"] == _released_facts(case["output"]["facts"]), case["name"]


def test_combined_reward_end_to_end_as_released(tmp_path):
    from factrl.harness.services.evidence import build_store, open_store
    from tests.evidence_fixtures import write_jsonl

    case = cases("combined_reward_end_to_end")["six_completions"]
    given, want = case["input"], case["output"]
    articles = [{"title": title, "text": p["text"].replace("<s>", "").replace("</s>", "")}
                for title, passages in given["passages"].items() for p in passages]
    store_path = tmp_path / "wiki.sqlite3"
    build_store(write_jsonl(tmp_path / "wiki.jsonl", articles), store_path, tokenizer="words", passage_tokens=64,
                force=False)
    script = {graded(a): reply for a, reply in given["judge_reply_by_answer"].items()}
    script.update({f"Text: {text}\nFacts:": reply for text, reply in given["extractor_reply_by_text"].items() if text})
    rows = [{"id": f"r{i}", "question": "What is the capital of France?", "answers": [gold], "title": title}
            for i, (gold, title) in enumerate(zip(given["best_answer"], given["title"]))]
    nli = TableNLI(given["nli_entailment_prob"])
    settings = {"threshold": given["nli_threshold"], "gamma": given["gamma"]}
    with JudgeServer(script, default="A") as server, open_store(store_path) as store:
        out = run(reward_for(server, store, nli, **settings), given["completions"], rows)
    totals = [r[0] for r in out.token_returns]
    assert totals == pytest.approx(want["total_reward_format_plus_combined"], rel=1e-9, abs=1e-12)
    assert [r["format"] for r in out.records] == want["format_rewards"]
    for record, fact, combined in zip(out.records, want["fact_terms"], want["combined_rewards"]):
        if record["fact_term"]:  # the release computes the term for every completion, uses it for -1 only
            assert record["fact"] == pytest.approx(fact, rel=1e-9, abs=1e-12)
            assert record["correctness"] + record["fact"] == pytest.approx(combined, rel=1e-9, abs=1e-12)
        else:
            assert record["correctness"] == combined


def test_the_prompt_differs_from_the_release_by_the_protocols_system_text_and_an_open_assistant_turn():
    """Vector `prompt_construction` (KnowRL's generate_prompt, main.py:71-90): with
    continue_final_message=True on a conversation that ends with the USER turn, the release's policy
    continues the question itself. The harness (docs/PROTOCOL.md §6; README "system prompt" row) gives
    every method the protocol's system prompt and opens the assistant turn: on the same chat template,
    those are the only two differences."""
    from transformers import PreTrainedTokenizerFast
    from tokenizers import Tokenizer, models

    from factrl.harness.engine.config import compose
    from factrl.harness.core.prompts import chat_messages

    case = cases("prompt_construction")["chatml_question"]
    x, released = case["input"], case["output"]
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")))
    tokenizer.chat_template = x["chat_template"]
    model = compose(["method=knowrl", "model=qwen3-8b"]).model  # system role, no demonstration, no prefix
    messages = chat_messages(x["user"], model)
    ours = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert released["prompt_continue_final_message"].endswith(x["user"])  # the release: the user turn left open
    assert not ours.endswith(x["user"]) and ours.endswith("<|im_start|>assistant\n")
    assert messages[0]["role"] == "system" and messages[0]["content"] != x["system"]
    assert ours.replace(messages[0]["content"], x["system"]) == released["for_contrast_add_generation_prompt"]
