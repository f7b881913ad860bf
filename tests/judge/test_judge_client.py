"""The judge client against a real HTTP judge on 127.0.0.1 (tests/judge/judge_server.py)."""
from __future__ import annotations

import json
import socket
import sqlite3

import pytest

from factrl.harness.engine.config import compose, group_options
from factrl.harness.core.errors import ConfigError, HarnessError
from factrl.harness.services.judge import (ATOMIC_FACTS, SIMPLEQA_GRADE, JudgeFailuresExceeded, JudgeResult, open_judge,
                                  read_settings)
from tests.judge.judge_server import JudgeServer

SECRET = "sk-judge-secret-value"


def _cfg(server, tmp_path, **extra):
    # Text replies: the structured path (reply_mode auto / json_schema) is test_judge_structured.py's.
    return {"backend": "openai", "base_url": server.url, "model": "judge-model", "api_key_env": "JUDGE_TEST_KEY",
            "timeout": 0.5, "max_retries": 2, "backoff": 0.01, "concurrency": 4, "max_reasks": 1,
            "cache": str(tmp_path / "judge.sqlite3"), "max_failed_share": 0.5, "reply_mode": "text", **extra}


def _grade_items(answers, gold="Paris"):
    return [{"question": "What is the capital of France?", "gold": gold, "answer": a} for a in answers]


@pytest.fixture
def server():
    with JudgeServer() as srv:
        yield srv


def test_grades_in_order_caches_successes_and_writes_stats(server, tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_TEST_KEY", SECRET)
    run = tmp_path / "run"
    answers = ["Paris", "Lyon", "I don't know", "Paris", "It is Paris."]
    with open_judge(_cfg(server, tmp_path), run_dir=run) as judge:
        results = judge.ask_many(SIMPLEQA_GRADE, _grade_items(answers))
        assert [r.value for r in results] == ["CORRECT", "INCORRECT", "NOT_ATTEMPTED", "CORRECT", "CORRECT"]
        assert all(r.ok and not r.cached and r.attempts == 1 for r in results)
        sent = len(server.bodies)
        assert sent == 1 + 4  # the preflight ping, then one request per distinct item
        again = judge.ask_many(SIMPLEQA_GRADE, _grade_items(answers))
        assert len(server.bodies) == sent and all(r.cached for r in again)
        facts = judge.ask(ATOMIC_FACTS, {"text": "Paris is in France. The Seine runs through it."})
        assert facts.value == ["Paris is in France.", "The Seine runs through it."]
        stats = judge.stats()
    assert stats["items"] == 11 and stats["calls"] == 5 and stats["cache_hits"] == 4 and stats["deduplicated"] == 2
    assert stats["failures"] == 0 and stats["input_tokens"] == 5 * 40 and stats["output_tokens"] == 5 * 2
    assert stats["wait_s"] > 0
    body = server.bodies[1]
    assert body["model"] == "judge-model" and body["temperature"] == 0.0 and body["max_tokens"] == 8
    assert server.headers_seen[1] == f"Bearer {SECRET}"  # the key from the named variable
    doc = json.loads((run / "judge_stats.json").read_text())
    assert doc["schema"] == "factrl.judge.stats/1" and doc["totals"]["calls"] == 5
    assert doc["by_prompt"]["atomic_facts"]["items"] == 1 and doc["judge"]["kind"] == "judge"
    assert SECRET not in (run / "judge_stats.json").read_text()

    # A new judge (a new run) on the same cache file asks nothing.
    with open_judge(_cfg(server, tmp_path), check=False) as judge:
        assert [r.value for r in judge.ask_many(SIMPLEQA_GRADE, _grade_items(answers))][0] == "CORRECT"
    assert len(server.bodies) == sent + 1
    rows = sqlite3.connect(tmp_path / "judge.sqlite3").execute("SELECT prompt, value FROM judge_cache").fetchall()
    assert sorted(rows) == sorted([("simpleqa_grade", '"CORRECT"')] * 2 + [("simpleqa_grade", '"INCORRECT"'),
                                   ("simpleqa_grade", '"NOT_ATTEMPTED"'),
                                   ("atomic_facts", '["Paris is in France.", "The Seine runs through it."]')])


def test_sampled_calls_are_neither_shared_nor_cached(server, tmp_path):
    with open_judge(_cfg(server, tmp_path, temperature=0.7), check=False) as judge:
        judge.ask_many(SIMPLEQA_GRADE, _grade_items(["Paris", "Paris"]))
        judge.ask_many(SIMPLEQA_GRADE, _grade_items(["Paris"]))
        assert judge.stats()["calls"] == 3 and judge.stats()["cache_hits"] == 0
    assert sqlite3.connect(tmp_path / "judge.sqlite3").execute("SELECT COUNT(*) FROM judge_cache").fetchone() == (0,)


def test_a_resumed_run_adds_to_its_stats(server, tmp_path):
    run = tmp_path / "run"
    for _ in range(2):
        with open_judge(_cfg(server, tmp_path, cache=None), run_dir=run, check=False) as judge:
            judge.ask_many(SIMPLEQA_GRADE, _grade_items(["Paris"]))
    doc = json.loads((run / "judge_stats.json").read_text())
    assert doc["attempts"] == 2 and doc["totals"]["calls"] == 2 and doc["totals"]["items"] == 2


def test_concurrency_is_bounded_and_used(tmp_path):
    with JudgeServer(latency=0.2) as server:
        with open_judge(_cfg(server, tmp_path, concurrency=3, cache=None), check=False) as judge:
            results = judge.ask_many(SIMPLEQA_GRADE, _grade_items([f"Paris {i}" for i in range(9)]))
    assert all(r.ok for r in results)
    assert server.max_in_flight == 3


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_preflight_names_the_setting_to_fix(server, tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(ConfigError, match=r"^judge.base_url=http://127.0.0.1:\d+/v1 does not answer .*judge.base_url"):
        open_judge(_cfg(server, tmp_path, base_url=url, max_retries=0))
    with pytest.raises(ConfigError, match=r"^judge.model='gpt-nope' is not served at .* \(it serves: judge-model\); "
                                          r"set judge.model"):
        open_judge(_cfg(server, tmp_path, model="gpt-nope"))
    server.models = []  # a server that lists nothing (transformers serve without a hub cache): the ping decides
    with pytest.raises(ConfigError, match=r"^judge.model='gpt-nope' is unknown to the server .*\(404: The model "
                                          r"`gpt-nope` does not exist.\); set judge.model"):
        open_judge(_cfg(server, tmp_path, model="gpt-nope"))


@pytest.mark.parametrize("overrides, message", [
    ({"base_url": None}, r"judge=openai needs judge.base_url"),
    ({"model": "???"}, r"judge=openai needs judge.model"),
    ({"concurrency": 0}, r"judge.concurrency=0 is out of range"),
    ({"max_failed_share": 2}, r"judge.max_failed_share=2 is out of range"),
    ({"timeout": "soon"}, r"judge.timeout='soon' is not a number"),
    ({"backend": "gpt"}, r"judge.backend='gpt' is not valid"),
    ({"stand_in": True}, r"judge.stand_in=true needs judge.note"),
])
def test_bad_settings_are_one_line_errors(overrides, message):
    cfg = {"backend": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m", **overrides}
    with pytest.raises(ConfigError, match=message):
        read_settings(cfg)


def test_judge_none_is_refused_by_methods_that_need_one():
    with pytest.raises(ConfigError, match=r"judge=none; use judge=reference"):
        open_judge({"backend": "none"})


@pytest.mark.parametrize("option", group_options("judge"))
def test_every_judge_option_composes_with_the_root_config(option):
    extra = ["judge.base_url=http://127.0.0.1:8000/v1", "judge.model=m"] if option == "openai" else []
    cfg = compose([f"judge={option}", *extra])
    settings = read_settings(cfg.judge)
    assert settings.backend == option
    assert compose([]).judge.backend == "reference"  # the embedded models' default
    assert compose(["model=llama-3.2-3b"]).judge.backend == "embedded"  # the root default


def test_failed_share_stops_the_run_with_the_counts(server, tmp_path):
    ok, bad = JudgeResult("CORRECT", True), JudgeResult(None, False, "HTTP 500 after 3 attempts")
    with open_judge(_cfg(server, tmp_path, max_failed_share=0.25), run_dir=tmp_path / "run", check=False) as judge:
        assert judge.check_failed_share([ok, ok, ok, bad]) == 1
        with pytest.raises(JudgeFailuresExceeded, match=r"^judge: 2 of 4 items failed in step 3 \(50% > "
                                                         r"judge.max_failed_share=0.25; first: HTTP 500 after 3 "
                                                         r"attempts\) \(counts in .*judge_stats.json\); .*rerun"):
            judge.check_failed_share([ok, bad, ok, bad], where="step 3")
    assert issubclass(JudgeFailuresExceeded, HarnessError)


def test_describe_records_the_judge_without_credentials(server, tmp_path):
    url = server.url.replace("http://", "http://user:pw-in-url@")
    with open_judge(_cfg(server, tmp_path, base_url=url), check=False) as judge:
        entry = judge.describe()
    assert entry["kind"] == "judge" and entry["backend"] == "openai" and entry["stand_in"] is False
    assert "pw-in-url" not in json.dumps(entry) and entry["prompts"] == {}  # nothing asked yet
    assert (entry["served_model"], entry["paper_model"], entry["substitute"]) == ("judge-model", None, None)
