"""`harness run method=forag` trains two steps on tiny-llama with PPO against a real HTTP judge
(the scripted server on 127.0.0.1) and a store the test writes, and records its leaderboard
rows, components and judge accounting."""
from __future__ import annotations

import json

import pytest

from tests.evidence_fixtures import judge_run_overrides
from tests.helpers import harness, optimizer_stand_in
from tests.knowrl.judge_server import JudgeServer

from .conftest import ROWS

pytestmark = pytest.mark.slow  # one real PPO training run (about a minute on 2 shared cores)


def run_forag(root, store_path, *extra):
    # tiny-llama's 16-token noise has no tags: it is read whole, each sentence is split into
    # the default reply's one sub-claim, and every verdict is SUPPORTED.
    with JudgeServer({"Claim: ": "SUPPORTED"}, default="- Marie Curie was born in Warsaw.") as server:
        result = harness("run", "method=forag", "model=tiny-llama",
                         *judge_run_overrides(server.url, store_path, [ROWS["curie"], ROWS["einstein"]], root), *extra)
        requests = server.texts()  # the prompts with their material blocks unwrapped
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return next((root / "runs").glob("*-forag-tiny-llama-*")), requests


@pytest.fixture(scope="module")
def forag_run(tmp_path_factory, store_path):
    return run_forag(tmp_path_factory.mktemp("forag_run"), store_path)


def test_two_steps_train_against_the_http_judge(forag_run):
    run, requests = forag_run
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "finished" and info["leaderboard"]["status"] == "recorded"
    assert info["method_algorithm"] == "ppo"
    assert (run / "train" / "adapter" / "adapter_config.json").is_file()
    log = [json.loads(line) for line in (run / "train" / "log.jsonl").read_text().splitlines()]
    steps = [entry for entry in log if "rewards/forag/judge_items" in entry]
    assert len(steps) == 2  # one reward call per rollout (its PPO epochs reuse it)
    assert all(entry["rewards/forag/judge_items"] > 0 for entry in steps)
    assert any("Claim: Marie Curie was born in Warsaw." in text for text in requests)
    # every key the README documents (the engine's no_signal included) is in the run's log
    from tests.forag.test_readme import documented_keys

    assert {f"rewards/forag/{k}" for k in documented_keys()} <= set(steps[0])
    records = [json.loads(line) for line in (run / "train" / "reward_records.jsonl").read_text().splitlines()]
    assert records and all(r["supported"] is True for r in records if r["claim"])


def test_run_records_components(forag_run):
    run, _ = forag_run
    components = json.loads((run / "train" / "components.json").read_text())["components"]
    assert set(components) == {"judge", "evidence", "settings", "optimizer", "fast_path"}  # PPO: no group advantages
    assert components["settings"]["placement"] == "sentence_end"
    assert components["settings"]["verify_prompt"] == "forag_verify@2"
    assert components["judge"]["prompts"]["forag_decompose"]["version"] == "2"
    info = json.loads((run / "run.json").read_text())
    # An openai judge and a built store are not stand-ins; the 8-bit optimizer is one on a CPU.
    assert info["stand_ins"] == optimizer_stand_in()
    assert (run / "judge_stats.json").is_file()


def test_adjusted_allocation_trains_with_one_completion_per_question(tmp_path, store_path):
    """docs/PROTOCOL.md §4's adjusted FoRAG allocation, C=1: PPO needs no group."""
    run, _ = run_forag(tmp_path, store_path, "experiment=forag-adjusted", "train.questions_per_step=2",
                       "leaderboard.enabled=false", "eval.limit=2")
    log = [json.loads(line) for line in (run / "train" / "log.jsonl").read_text().splitlines()]
    assert len([e for e in log if "rewards/forag/judge_items" in e]) == 2
    assert json.loads((run / "run.json").read_text())["status"] == "finished"


def test_reference_judge_gives_a_signal(tmp_path, store_path):
    """The embedded models' default judge=reference answers both prompts in-process (no server):
    no judge failures, sub-claims verified, the reference judge recorded as a stand-in."""
    overrides = [o for o in judge_run_overrides("http://unused/v1", store_path, [ROWS["curie"], ROWS["einstein"]],
                                                tmp_path) if not o.startswith("judge")]
    result = harness("run", "method=forag", "model=tiny-llama", *overrides, "leaderboard.enabled=false",
                     "eval.limit=2")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    run = next((tmp_path / "runs").glob("*-forag-tiny-llama-*"))
    log = [json.loads(line) for line in (run / "train" / "log.jsonl").read_text().splitlines()]
    steps = [entry for entry in log if "rewards/forag/judge_items" in entry]
    assert len(steps) == 2 and sum(e["rewards/forag/judge_items"] for e in steps) > 0
    assert all(e["rewards/forag/judge_failed"] == 0.0 and e["rewards/forag/no_signal_judge"] == 0.0 for e in steps)
    components = json.loads((run / "train" / "components.json").read_text())["components"]
    assert components["judge"]["backend"] == "reference" and components["judge"]["stand_in"] is True
    assert "judge" in json.loads((run / "run.json").read_text())["stand_ins"]
