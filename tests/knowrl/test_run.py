"""`harness run method=knowrl` trains two steps on tiny-llama against a real HTTP judge (the
scripted server on 127.0.0.1), a store the test writes and the NLI stand-in, and records its
leaderboard rows, components and judge accounting."""
from __future__ import annotations

import json

import pytest

from tests.evidence_fixtures import judge_run_overrides
from tests.helpers import harness, optimizer_stand_in

from .conftest import ROWS
from .judge_server import JudgeServer

pytestmark = pytest.mark.slow  # one real training run (about a minute on 2 shared cores)


@pytest.fixture(scope="module")
def knowrl_run(tmp_path_factory, store_path):
    root = tmp_path_factory.mktemp("knowrl_run")
    # tiny-llama's 16-token noise has no answer block: -1 without a grade call, then the
    # reasoning (the whole completion) goes to the fact split, answered by the default reply.
    with JudgeServer(default="- Marie Curie was born in Warsaw.") as server:
        result = harness("run", "method=knowrl", "model=tiny-llama",
                         *judge_run_overrides(server.url, store_path, [ROWS["curie"], ROWS["einstein"]], root))
        requests = list(server.requests)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return next((root / "runs").glob("*-knowrl-tiny-llama-*")), requests


def test_two_steps_train_against_the_http_judge(knowrl_run):
    run, requests = knowrl_run
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "finished" and info["leaderboard"]["status"] == "recorded"
    assert (run / "train" / "adapter" / "adapter_config.json").is_file()
    log = [json.loads(line) for line in (run / "train" / "log.jsonl").read_text().splitlines()]
    steps = [entry for entry in log if "rewards/knowrl/judge_items" in entry]
    assert len(steps) == 2
    assert all(entry["rewards/knowrl/judge_items"] > 0 for entry in steps)
    assert requests and all(body["model"] == "judge-test" for body in requests)
    # every key the README documents (the engine's no_signal included) is in the run's log
    from tests.knowrl.test_readme import documented_keys

    assert {f"rewards/knowrl/{k}" for k in documented_keys()} <= set(steps[0])
    records = [json.loads(line) for line in (run / "train" / "reward_records.jsonl").read_text().splitlines()]
    assert records and all(r["fact_term"] for r in records if r["grade"] is None)


def test_run_records_components_and_stand_ins(knowrl_run):
    run, _ = knowrl_run
    components = json.loads((run / "train" / "components.json").read_text())["components"]
    assert set(components) == {"judge", "nli", "evidence", "retrieval", "settings", "optimizer", "advantages", "fast_path"}
    assert (components["optimizer"]["optim"], components["optimizer"]["loss_type"]) == ("adamw_8bit", "dapo")
    assert components["nli"]["backend"] == "standin" and components["retrieval"]["backend"] == "bm25"
    info = json.loads((run / "run.json").read_text())
    # An openai judge and a built store are not stand-ins; the 8-bit optimizer is one on a CPU.
    assert info["stand_ins"] == sorted(["nli", "retrieval", *optimizer_stand_in()])
    assert (run / "judge_stats.json").is_file()


def test_a_failing_judge_stops_the_run_and_a_rerun_resumes(tmp_path, store_path):
    """Step 1's fact splits succeed, then the judge answers 500: step 2 has more than
    judge.max_failed_share failures, so the run stops with the counts (exit 2, one line);
    once the judge is healthy again the same command resumes from step 1's checkpoint."""
    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps([ROWS["curie"], ROWS["einstein"]]))
    fact = "- Marie Curie was born in Warsaw."
    with JudgeServer({"Reply with the letter A": "A", "Say hello.": "hello"}, default=[fact] * 4 + ["500"]) as server:
        command = ["run", "method=knowrl", "model=tiny-llama", "judge=openai", f"judge.base_url={server.url}",
                   "judge.model=judge-test", "judge.api_key_env=null", "judge.cache=null", "judge.max_retries=1",
                   "evidence=file", f"evidence.store={store_path}", "pool=file", f"pool.path={pool}",
                   "pool.dedup_against=[]", f"output_dir={tmp_path / 'runs'}", "leaderboard.enabled=false",
                   "eval.limit=2"]
        failed = harness(*command)
        assert failed.returncode == 2, failed.stdout[-2000:] + failed.stderr[-3000:]
        errors = [line for line in failed.stderr.splitlines() if line.startswith("harness run: error:")]
        assert len(errors) == 1 and "items failed" in errors[0] and "judge.max_failed_share=0.2" in errors[0]
        run = next((tmp_path / "runs").glob("*-knowrl-tiny-llama-*"))
        assert json.loads((run / "run.json").read_text())["status"] == "failed"
        assert (run / "train" / "checkpoint-1").is_dir()
        server.default = fact  # the judge is back
        resumed = harness(*command)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-3000:]
    assert "resuming from" in (run / "run.log").read_text()
    log = [json.loads(line) for line in (run / "train" / "log.jsonl").read_text().splitlines()]
    assert [e["step"] for e in log if "rewards/knowrl/judge_items" in e] == [1, 2]
    assert json.loads((run / "run.json").read_text())["status"] == "finished"
