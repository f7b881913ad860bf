"""Structured replies and per-prompt decoding against a real HTTP judge on 127.0.0.1 that enforces
the JSON schema it is sent (tests/judge/judge_server.py, structured="follow"), refuses the field
("refuse") or ignores it as `transformers serve` does ("ignore")."""
from __future__ import annotations

import dataclasses
import json
import sqlite3

import pytest

from factrl.harness.core.errors import ConfigError
from factrl.harness.services.judge import ATOMIC_FACTS, SIMPLEQA_GRADE, Decoding, open_judge
from tests.judge.judge_server import JudgeServer


def _cfg(server, tmp_path, **extra):
    return {"backend": "openai", "base_url": server.url, "model": "judge-model", "api_key_env": None, "timeout": 2.0,
            "max_retries": 1, "backoff": 0.01, "concurrency": 4, "max_reasks": 1,
            "cache": str(tmp_path / "judge.sqlite3"), "max_failed_share": 1.0, **extra}


def _grades(answers):
    return [{"question": "What is the capital of France?", "gold": "Paris", "answer": a} for a in answers]


def _formats(server):
    return [b.get("response_format", {}).get("json_schema", {}).get("name") for b in server.bodies]


def test_auto_probes_once_then_asks_for_the_schema(tmp_path):
    with JudgeServer(structured="follow") as server, \
            open_judge(_cfg(server, tmp_path), run_dir=tmp_path / "run") as judge:
        results = judge.ask_many(SIMPLEQA_GRADE, _grades(["Paris", "Lyon", "I don't know"]))
        facts = judge.ask(ATOMIC_FACTS, {"text": "Paris is in France. The Seine runs through it."})
        entry = judge.describe()
    assert [r.value for r in results] == ["CORRECT", "INCORRECT", "NOT_ATTEMPTED"]
    assert facts.value == ["Paris is in France.", "The Seine runs through it."]
    # ping, probe, three grades, one facts request: the probe ran once, at the preflight
    assert _formats(server) == [None, "factrl_probe", "simpleqa_grade", "simpleqa_grade", "simpleqa_grade",
                                "atomic_facts"]
    sent = server.bodies[2]["response_format"]
    assert sent == {"type": "json_schema", "json_schema": {"name": "simpleqa_grade", "schema": SIMPLEQA_GRADE.schema,
                                                           "strict": True}}
    assert entry["reply_mode"] == "json_schema" and entry["structured_supported"] is True
    assert entry["prompts"]["simpleqa_grade"] == {"version": "2", "source": SIMPLEQA_GRADE.source,
                                                  "reply_mode": "json_schema"}
    record = sqlite3.connect(tmp_path / "judge.sqlite3").execute(
        "SELECT value FROM meta WHERE name LIKE 'structured_replies:%'").fetchall()
    assert record == [("true",)]  # the endpoint record: the next run does not probe again

    with JudgeServer(structured="follow") as other:  # a fresh server under a new URL is probed; the same URL is not
        with open_judge(_cfg(other, tmp_path, base_url=other.url)) as judge:
            judge.ask(SIMPLEQA_GRADE, _grades(["Paris"])[0])
        assert _formats(other)[:2] == [None, "factrl_probe"]


@pytest.mark.parametrize("behaviour", ["refuse", "ignore"])
def test_unsupported_endpoints_fall_back_to_text_once(tmp_path, behaviour):
    with JudgeServer(structured=behaviour) as server, open_judge(_cfg(server, tmp_path)) as judge:
        results = judge.ask_many(SIMPLEQA_GRADE, _grades(["Paris", "Lyon"]))
        entry = judge.describe()
    assert [r.value for r in results] == ["CORRECT", "INCORRECT"]
    assert _formats(server) == [None, "factrl_probe", None, None]  # probed once, then text
    assert entry["reply_mode"] == "text" and entry["structured_supported"] is False
    assert entry["prompts"]["simpleqa_grade"]["reply_mode"] == "text"


def test_forced_json_schema_on_an_endpoint_without_it_is_a_one_line_error(tmp_path):
    with JudgeServer(structured="refuse") as server:
        with pytest.raises(ConfigError, match=r"^judge.reply_mode=json_schema, but the judge at "
                                              r"http://127.0.0.1:\d+/v1 does not take structured replies "
                                              r".*set judge.reply_mode=auto or text"):
            open_judge(_cfg(server, tmp_path, reply_mode="json_schema"))


def test_text_mode_never_sends_the_field(tmp_path):
    with JudgeServer(structured="follow") as server, open_judge(_cfg(server, tmp_path, reply_mode="text")) as judge:
        assert judge.ask(SIMPLEQA_GRADE, _grades(["Paris"])[0]).value == "CORRECT"
    assert _formats(server) == [None, None]  # ping, one grade: no probe


def test_a_stale_record_falls_back_when_the_server_refuses_mid_run(tmp_path):
    with JudgeServer(structured="follow") as server:  # probed: supported
        with open_judge(_cfg(server, tmp_path)) as judge:
            judge.ask(SIMPLEQA_GRADE, _grades(["Paris"])[0])
        server.structured = "refuse"  # the same URL now serves something without structured outputs
        with open_judge(_cfg(server, tmp_path, cache=str(tmp_path / "judge.sqlite3")), check=False) as judge:
            result = judge.ask(SIMPLEQA_GRADE, _grades(["Lyon"])[0])
            assert result.ok and result.value == "INCORRECT" and judge.describe()["structured_supported"] is False
            assert judge.stats()["failures"] == 0


def test_structured_replies_remove_the_parse_failures_of_unreadable_text(tmp_path):
    """The same 40% of replies are prose ("garbage"): text mode re-asks and fails on them, the
    schema-enforcing server answers every one in the schema's form."""
    answers = [f"Paris {i}" for i in range(40)]
    counts = {}
    for mode in ("text", "json_schema"):
        with JudgeServer(fault_rate=0.4, fault_kinds=("garbage",), seed=3, structured="follow") as server:
            with open_judge(_cfg(server, tmp_path, reply_mode=mode, cache=None, max_reasks=0), check=False) as judge:
                results = judge.ask_many(SIMPLEQA_GRADE, _grades(answers))
                counts[mode] = (judge.stats()["parse_failures"], sum(not r.ok for r in results))
    assert counts["text"][0] >= 8 and counts["text"][0] == counts["text"][1]  # every unreadable reply lost its item
    assert counts["json_schema"] == (0, 0)


def test_a_structured_reply_that_is_not_json_is_a_parse_error_and_reasked(tmp_path):
    from factrl.harness.services.judge.cache import JudgeCache
    from factrl.harness.services.judge.structured import record_key

    with JudgeServer(structured="ignore", reply_for=lambda messages: "D") as server:
        cache = JudgeCache(tmp_path / "judge.sqlite3")
        cache.put_meta(record_key(server.url, "judge-model"), "true")  # a stale record says: supported
        cache.close()
        with open_judge(_cfg(server, tmp_path), check=False) as judge:
            result = judge.ask(SIMPLEQA_GRADE, _grades(["Paris"])[0])
    assert _formats(server) == ["simpleqa_grade", "simpleqa_grade"]  # asked structured, re-asked once
    assert not result.ok and "structured reply that is not JSON" in result.error and result.reasks == 1


def test_per_prompt_decoding_overrides_the_group_and_keys_the_cache(tmp_path):
    sampled = dataclasses.replace(SIMPLEQA_GRADE, name="grade_sampled",
                                  decoding=Decoding(temperature=1.0, top_p=0.9, max_tokens=64))
    with JudgeServer(structured="follow") as server, \
            open_judge(_cfg(server, tmp_path, reply_mode="text", top_p=0.5), check=False) as judge:
        judge.ask(SIMPLEQA_GRADE, _grades(["Paris"])[0])
        judge.ask(sampled, _grades(["Paris"])[0])
        judge.ask(sampled, _grades(["Paris"])[0])  # sampled: not cached, asked again
        assert judge.decoding_for(sampled) == {"temperature": 1.0, "top_p": 0.9, "max_tokens": 64}
    group, own, again = server.bodies
    assert (group["temperature"], group["top_p"], group["max_tokens"]) == (0.0, 0.5, 8)  # the prompt's 8 tokens
    assert (own["temperature"], own["top_p"], own["max_tokens"]) == (1.0, 0.9, 64) and again == own

    cached = dataclasses.replace(sampled, cache_sampled=True)
    with JudgeServer(structured="follow") as server, \
            open_judge(_cfg(server, tmp_path, reply_mode="text"), check=False) as judge:
        for _ in range(2):
            judge.ask(cached, _grades(["Paris"])[0])
        assert len(server.bodies) == 1  # cache_sampled: the sampled reply is reused
        other = dataclasses.replace(cached, decoding=Decoding(temperature=1.0, max_tokens=65))
        judge.ask(other, _grades(["Paris"])[0])
        assert len(server.bodies) == 2  # another effective decoding is another cache key


def test_max_tokens_cap_bounds_every_reply(tmp_path):
    long = dataclasses.replace(ATOMIC_FACTS, decoding=Decoding(max_tokens=4096))
    with JudgeServer(structured="follow") as server, \
            open_judge(_cfg(server, tmp_path, reply_mode="text", max_tokens_cap=48, cache=None), check=False) as judge:
        judge.ask(long, {"text": "Paris is in France."})
        judge.ask(SIMPLEQA_GRADE, _grades(["Paris"])[0])
        assert judge.describe()["max_tokens_cap"] == 48
    assert [b["max_tokens"] for b in server.bodies] == [48, 8]


def test_the_component_lists_registered_and_asked_prompts(tmp_path):
    with JudgeServer(structured="follow") as server:
        with open_judge(_cfg(server, tmp_path, reply_mode="text"), prompts=[ATOMIC_FACTS], check=False) as judge:
            assert list(judge.describe()["prompts"]) == ["atomic_facts"]  # before any call
            judge.ask(SIMPLEQA_GRADE, _grades(["Paris"])[0])
            entry = judge.describe()
    assert entry["prompts"] == {"atomic_facts": {"version": "2", "source": ATOMIC_FACTS.source, "reply_mode": "text"},
                                "simpleqa_grade": {"version": "2", "source": SIMPLEQA_GRADE.source,
                                                   "reply_mode": "text"}}
    json.dumps(entry)


def test_registered_prompts_show_the_mode_the_preflight_found(tmp_path):
    with JudgeServer(structured="follow") as server, \
            open_judge(_cfg(server, tmp_path), prompts=[SIMPLEQA_GRADE]) as judge:
        assert judge.describe()["prompts"]["simpleqa_grade"]["reply_mode"] == "json_schema"  # before any call
    with JudgeServer(structured="ignore") as server, open_judge(_cfg(server, tmp_path, cache=None),
                                                                prompts=[SIMPLEQA_GRADE]) as judge:
        assert judge.describe()["prompts"]["simpleqa_grade"]["reply_mode"] == "text"
