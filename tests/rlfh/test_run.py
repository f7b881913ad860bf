"""`harness run method=rlfh` trains two PPO steps on tiny-llama against a real HTTP judge (the
scripted server on 127.0.0.1) and a store the test writes, and records its leaderboard rows,
components and judge accounting."""
from __future__ import annotations

import json

import pytest

from tests.evidence_fixtures import judge_run_overrides
from tests.helpers import harness

from .conftest import ROWS
from .scripted_judge import RLFHJudge

pytestmark = pytest.mark.slow  # one real PPO training run (about a minute on 2 shared cores)

# tiny-llama's noise has no tags: it is read whole (alignment.py). The judge echoes its first line
# (so the echo is found in the response) with one statement, verified Correct and scored 5.
STATEMENT = "Marie Curie was born in Warsaw."


def echo_first_line(response: str) -> str:
    return f">> Sentence 1: {response.strip().splitlines()[0]}\n* {STATEMENT}"


@pytest.fixture(scope="module")
def rlfh_run(tmp_path_factory, store_path):
    root = tmp_path_factory.mktemp("rlfh_run")
    with RLFHJudge(default_extract=echo_first_line, default_verify="Correct", default_assess="5") as server:
        result = harness("run", "method=rlfh", "model=tiny-llama",
                         *judge_run_overrides(server.url, store_path, [ROWS["curie"], ROWS["einstein"]], root))
        requests = list(server.requests)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return next((root / "runs").glob("*-rlfh-tiny-llama-*")), requests


def test_two_steps_train_against_the_http_judge(rlfh_run):
    run, requests = rlfh_run
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "finished" and info["leaderboard"]["status"] == "recorded"
    assert info["method_algorithm"] == "ppo"
    assert (run / "train" / "adapter" / "adapter_config.json").is_file()
    log = [json.loads(line) for line in (run / "train" / "log.jsonl").read_text().splitlines()]
    steps = [entry for entry in log if "rewards/rlfh/judge_items" in entry]
    assert len(steps) == 2  # one reward call per rollout (its PPO epochs reuse it)
    assert all(entry["rewards/rlfh/judge_items"] > 0 and entry["rewards/rlfh/statements"] > 0 for entry in steps)
    assert requests and all(body["model"] == "judge-test" for body in requests)
    kinds = {k: sum(k in json.dumps(body) for body in requests) for k in ("# Statements", "# Verification", "# Evaluation")}
    assert all(kinds.values()), kinds  # extract, verify and assess all reached the server
    from tests.rlfh.test_readme import documented_keys

    assert {f"rewards/rlfh/{k}" for k in documented_keys()} <= set(steps[0])
    records = [json.loads(line) for line in (run / "train" / "reward_records.jsonl").read_text().splitlines()]
    scored = [r for r in records if r.get("statement")]
    kept = [r for r in scored if not r["hedged"]]
    assert kept and all(r["verdict"] == "correct" and r["truth"] == pytest.approx(0.3 * 1.3) for r in kept)  # train_sh


def test_run_records_components(rlfh_run):
    run, _ = rlfh_run
    components = json.loads((run / "train" / "components.json").read_text())["components"]
    assert set(components) == {"judge", "evidence", "settings", "optimizer", "fast_path"}  # PPO: no group advantages
    assert components["optimizer"]["adam_betas"] == [0.9, 0.95] and components["optimizer"]["stand_in"] is False
    assert components["settings"]["constants"] == "train_sh" and components["settings"]["judge_failure"] == "no_signal"
    info = json.loads((run / "run.json").read_text())
    assert info["stand_ins"] == []  # an openai judge and a built store are not stand-ins
    assert (run / "judge_stats.json").is_file()
