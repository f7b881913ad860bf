"""Reasoning text, claim extraction against a real HTTP judge on 127.0.0.1, and the whole judged
pass of one set (FActScore-NPM, semantic checks, SimpleQA grader) written into its metrics.json."""
from __future__ import annotations

import json

import pytest

from tests.evals.factscore_helpers import build_store, build_tiny_mlm
from tests.evals.semantic_server import judge_cfg, semantic_server


@pytest.mark.parametrize("completion, reasoning", [
    ("<think>Paris is in France.</think><answer>Paris</answer>", "Paris is in France."),
    ("Paris is in France. <answer>Paris</answer>", "Paris is in France."),  # no think tags
    ("Paris is in France.", "Paris is in France."),  # no tags at all
    ("<think>Paris is in France. It is", "Paris is in France. It is"),  # truncated think block
    ("Paris is in France.</think><answer>Paris</answer>", "Paris is in France."),  # opened in the prompt
    ("<answer>Paris</answer>", ""), ("", ""), ("<think></think><answer>x</answer>", ""),
])
def test_reasoning_text(completion, reasoning):
    from factrl.evals.factscore import reasoning_text

    assert reasoning_text(completion) == reasoning


def test_dedupe_drops_exact_duplicates_only():
    from factrl.evals.factscore import dedupe

    assert dedupe(["A b c.", " A b c. ", "a b c.", ""]) == ["A b c.", "a b c."]


@pytest.fixture
def server():
    with semantic_server() as srv:
        yield srv


def test_verbatim_claims_come_from_one_call_per_reasoning_and_empty_reasoning_costs_no_call(server, tmp_path):
    from factrl.evals.factscore import extract_claims
    from factrl.harness.services.judge import find_material, open_judge

    texts = ["Paris is the capital of France. The Seine flows through Paris. Paris is the capital of France.",
             "", "Hmm."]
    with open_judge(judge_cfg(server, tmp_path), check=False) as judge:
        claims = extract_claims(judge, texts)  # the default: the CorVer paper's verbatim extractor
        assert judge.stats()["items"] == 2
    # exact duplicates removed (CorVer §A.2); a reply of NONE is a response without claims
    assert claims == [["Paris is the capital of France.", "The Seine flows through Paris."], [], []]
    # concurrent: any order; the structured-replies support probe carries no material and is no item
    items = [b for b in server.bodies if b.get("response_format", {}).get("json_schema", {}).get("name") != "factrl_probe"]
    sent = sorted(find_material(b["messages"][0]["content"]) for b in items)
    assert sent == [[("text", "Hmm.")], [("text", texts[0])]]


def test_factscore_claims_are_asked_per_sentence_and_flattened_with_duplicates(server, tmp_path):
    from factrl.evals.factscore import extract_claims
    from factrl.evals.factscore.demos import STANDIN_DEMOS
    from factrl.harness.services.judge import open_judge

    texts = ["Sure, here you go. Paris is the capital of France. Paris is the capital of France.\nHmm, it is old.",
             "Marie Curie won the Nobel Prize in Physics.", ""]
    with open_judge(judge_cfg(server, tmp_path), check=False) as judge:
        claims = extract_claims(judge, texts, mode="factscore", demos=STANDIN_DEMOS)
        # "Sure, ..." gets no facts without a call (atomic_facts.py:79-82); the repeated sentence is asked once
        assert judge.stats()["items"] == 3
    assert claims[1] == ["Marie Curie won the Nobel Prize in Physics."]
    assert claims[0] is None  # its "Hmm" sentence got an unreadable reply twice: the response has no claims
    assert claims[2] == []
    with open_judge(judge_cfg(server, tmp_path), check=False) as judge:
        again = extract_claims(judge, ["Paris is the capital of France. Paris is the capital of France."],
                               mode="factscore", demos=STANDIN_DEMOS)
    assert again == [["Paris is the capital of France.", "Paris is the capital of France."]]  # FActScore keeps both


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    root = tmp_path_factory.mktemp("fs-assets")
    return build_store(root), build_tiny_mlm(root / "mlm")


def test_judged_evaluations_join_the_sets_metrics_file(server, tmp_path, assets):
    from factrl.evals.judged import JudgedEvals
    from factrl.evals.results import score_set
    from factrl.evals.settings import EvalSettings
    from factrl.evals.sets import load_set

    store, mlm = assets
    eval_set = load_set("demo", limit=3)
    completions = ["<think>Paris is the capital of France. The river Seine flows through Paris.</think>"
                   "<answer>Paris</answer>", "<answer>Berlin</answer>", "<think>The of the.</think>"]
    rows = {r.id: {"id": r.id, "completion": c} for r, c in zip(eval_set.records, completions)}
    settings = EvalSettings.from_config({
        "sets": ["demo"], "factscore": True, "semantic": True, "simpleqa_grader": True,
        "factscore_options": {"sets": ["demo"], "store": str(store), "npm": {"model": str(mlm)}},
        "simpleqa_grader_options": {"sets": ["demo"]}})
    judged = JudgedEvals.open(settings, {"judge": judge_cfg(server, tmp_path)}, tmp_path / "eval")
    try:
        generation = {"backend": "hf", "model": {"name": "m", "id": "m"}, "adapter": None, "prompt_version": "1",
                      "prompt_hash": "ab" * 8, "decoding": {}, "limit": 3}
        doc = score_set(eval_set, rows, settings.make_scorer(), generation, tmp_path / "eval" / "demo", "x",
                        judged=judged)
    finally:
        judged.close()
    metrics = doc["metrics"]
    assert metrics["accuracy"]["n"] == 3  # the scorer's metrics are untouched
    assert metrics["factscore_responses"]["value"] == 3  # the empty reasoning is in N
    assert metrics["factscore_facts"]["value"] == 2 and metrics["factscore_covered"]["value"] == 1
    assert {"semantic_accuracy", "simpleqa_f", "simpleqa_accuracy_given_attempted"} <= set(metrics)
    fs = doc["judged"]["factscore"]
    assert fs["counts"]["empty_reasoning"] == 1 and fs["counts"]["claims_skipped"] == 1
    assert fs["seed"] == 42 and fs["components"]["masked_lm"]["stand_in"] is True
    assert fs["extractor"]["claims"] == "verbatim" and fs["extractor"]["prompt"]["name"] == "verbatim_claims"
    assert fs["extractor"]["decoding"] == {"temperature": 0.0, "enable_thinking": False}  # CorVer §A.2
    assert fs["retriever"]["version"] == "2" and fs["version"] == "2"
    assert fs["components"]["evidence"]["backend"] == "sqlite-fts5"
    assert doc["judged"]["semantic"]["components"]["judge"]["model"] == "judge-model"
    grader = doc["judged"]["simpleqa_grader"]
    assert (grader["template"], grader["parse"], grader["graded_text"]) == ("simple-evals", "first_letter", "response")
    assert grader["prompts"][0]["name"] == "simpleqa_grader"
    written = json.loads((tmp_path / "eval" / "demo" / "metrics.json").read_text())
    assert written["judged"]["factscore"]["counts"] == fs["counts"]
    records = [json.loads(line) for line in (tmp_path / "eval" / "demo" / "factscore.jsonl").open()]
    assert [r["facts"][0]["article"] for r in records if r["facts"]] == ["Paris"]
    assert (tmp_path / "eval" / "judge_stats.json").is_file()


def test_a_missing_store_is_an_error_before_anything_is_generated(server, tmp_path, assets):
    from factrl.evals.judged import JudgedEvals
    from factrl.evals.settings import EvalSettings
    from factrl.harness.core.errors import DataError

    settings = EvalSettings.from_config({"sets": ["demo"], "factscore": True, "factscore_options": {
        "sets": ["demo"], "store": str(tmp_path / "missing.sqlite3"), "npm": {"model": str(assets[1])}}})
    with pytest.raises(DataError, match="missing.sqlite3"):
        JudgedEvals.open(settings, {"judge": judge_cfg(server, tmp_path)}, tmp_path / "eval")
    assert server.bodies == []  # not even the judge was asked


@pytest.mark.parametrize("overrides, message", [
    ({"factscore": True}, "none of eval.factscore_options.sets"),
    ({"factscore_options": {"sample": 0}}, "eval.factscore_options.sample=0"),
    ({"factscore_options": {"nmp": {}}}, "eval.factscore_options.nmp is not an option"),
    ({"factscore_options": {"npm": {"modle": "x"}}}, "eval.factscore_options.npm.modle"),
    ({"simpleqa_grader_options": {"parse": "lenient"}}, "eval.simpleqa_grader_options.parse"),
    ({"simpleqa_grader": True}, "none of eval.simpleqa_grader_options.sets"),
    ({"factscore_options": {"threshold": 3}}, "threshold=3"),
    ({"factscore_options": {"claims": "atomic"}}, "eval.factscore_options.claims='atomic'"),
    ({"factscore_options": {"claims": "factscore", "demos": "/nonexistent/demons.json"}},
     "eval.factscore_options.demos=/nonexistent/demons.json"),
    ({"simpleqa_grader_options": {"template": "long"}}, "eval.simpleqa_grader_options.template='long'"),
    ({"simpleqa_grader_options": {"graded_text": "think"}}, "eval.simpleqa_grader_options.graded_text='think'"),
])
def test_bad_options_are_one_line_config_errors(overrides, message):
    from factrl.evals.settings import EvalSettings
    from factrl.harness.core.errors import ConfigError

    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        EvalSettings.from_config({"sets": ["demo"], **overrides})


def test_harness_eval_options_compose_and_check_the_store_before_generation(server, tmp_path):
    from factrl.evals import evaluate
    from factrl.harness.engine.config import compose
    from factrl.harness.core.errors import DataError
    from factrl.harness.services.models import ModelIdentity

    cfg = compose(["eval=demo", "eval.limit=2", "eval.factscore=true", "eval.factscore_options.sets=[demo]",
                   f"eval.factscore_options.store={tmp_path / 'nope.sqlite3'}", "eval.semantic=true",
                   "judge=openai", f"judge.base_url={server.url}", "judge.model=judge-model"])
    identity = ModelIdentity("m", "m", "local", "ab" * 32, str(tmp_path / "no-model"))
    with pytest.raises(DataError, match="nope.sqlite3"):
        evaluate(cfg, identity=identity, out_dir=tmp_path / "eval")
    assert not (tmp_path / "eval" / "demo" / "generations.jsonl").exists()


@pytest.mark.slow  # tiny-llama generation plus the tiny masked LM: about 30 s on the shared 2-core machine
def test_harness_eval_runs_the_judged_evaluations_end_to_end(server, tmp_path, assets):
    from factrl.harness.engine.cli import main
    from factrl.leaderboard.record import rows_from_run

    store, mlm = assets
    status = main(["eval", "model=tiny-llama", "eval=demo", "eval.cache=false", "eval.limit=2",
                   "eval.max_new_tokens=16", "eval.factscore=true", "eval.factscore_options.sets=[demo]",
                   f"eval.factscore_options.store={store}", f"eval.factscore_options.npm.model={mlm}",
                   "eval.semantic=true", "eval.simpleqa_grader=true", "eval.simpleqa_grader_options.sets=[demo]",
                   "judge=openai", f"judge.base_url={server.url}", "judge.model=judge-model", "judge.cache=null",
                   f"output_dir={tmp_path}", "leaderboard.enabled=false"])
    assert status == 0
    run = next(tmp_path.glob("*-eval-tiny-llama-*"))
    doc = json.loads((run / "eval" / "demo" / "metrics.json").read_text())
    assert doc["metrics"]["factscore_responses"]["value"] == 2
    assert doc["metrics"]["semantic_accuracy"]["n"] + doc["judged"]["semantic"]["failed"] == 2
    assert doc["metrics"]["simpleqa_f"]["n"] == 2
    assert set(doc["judged"]) == {"factscore", "semantic", "simpleqa_grader"}
    summary = json.loads((run / "metrics.json").read_text())
    assert "factscore_precision" in summary["sets"]["demo"]["metrics"]
    row = rows_from_run(run)[0]
    assert row["judged"]["factscore"]["components"]["masked_lm"]["stand_in"] is True
