"""The judge client under injected faults: timeouts, 429 with Retry-After, 500,
truncated JSON, cut and unparsable replies, scripted per item and drawn at random at 30%.

No crash, nothing failed is cached, every request and every failure is counted.
"""
from __future__ import annotations

import logging
import sqlite3

import pytest

from factrl.harness.services.judge import ATOMIC_FACTS, SIMPLEQA_GRADE, open_judge
from tests.judge.judge_server import JudgeServer, good_reply


def _cfg(server, tmp_path, **extra):
    # Text replies (an unreadable reply is what structured replies remove; see test_judge_structured.py).
    return {"backend": "openai", "base_url": server.url, "model": "judge-model", "timeout": 0.5, "max_retries": 2,
            "backoff": 0.01, "concurrency": 8, "max_reasks": 1, "cache": str(tmp_path / "judge.sqlite3"),
            "reply_mode": "text", **extra}


def _cached_rows(tmp_path) -> list[tuple[str, str]]:
    return sqlite3.connect(tmp_path / "judge.sqlite3").execute("SELECT prompt, value FROM judge_cache").fetchall()


@pytest.fixture
def judge_log(caplog, monkeypatch):
    monkeypatch.setattr(logging.getLogger("factrl"), "propagate", True)
    caplog.set_level(logging.INFO, logger="factrl.harness.services.judge")
    return caplog


def test_each_fault_kind_is_retried_reasked_or_failed_and_counted(tmp_path, judge_log):
    answers = ["Paris slow", "Paris 429", "Paris 500", "Paris badjson", "Paris garbage", "Paris cut",
               "Paris down", "Paris nonsense", "Paris refused", "Paris"]
    with JudgeServer() as server:
        server.failures = {"Paris slow": ["slow"], "Paris 429": ["429"], "Paris 500": ["500", "500"],
                           "Paris badjson": ["badjson"], "Paris garbage": ["garbage"], "Paris cut": ["cut"],
                           "Paris down": ["500"] * 3, "Paris nonsense": ["garbage", "garbage"],
                           "Paris refused": ["400"]}
        items = [{"question": "Capital of France?", "gold": "Paris", "answer": a} for a in answers]
        with open_judge(_cfg(server, tmp_path), run_dir=tmp_path / "run", check=False) as judge:
            results = judge.ask_many(SIMPLEQA_GRADE, items)
            stats = judge.stats()
        (t429, _), (t_retry, _) = [(t, a) for k, t, a in server.arrivals if k == "Paris 429"]
        arrivals = len(server.arrivals)
    by_answer = dict(zip(answers, results))
    for answer in ("Paris slow", "Paris 429", "Paris 500", "Paris badjson", "Paris garbage", "Paris cut", "Paris"):
        assert by_answer[answer].ok and by_answer[answer].value == "CORRECT", answer
    assert t_retry - t429 >= 1.0  # Retry-After: 1 honoured
    assert by_answer["Paris 500"].attempts == 3 and by_answer["Paris garbage"].reasks == 1
    down, nonsense, refused = by_answer["Paris down"], by_answer["Paris nonsense"], by_answer["Paris refused"]
    assert (down.ok, down.value, down.error) == (False, None, "HTTP 500 after 3 attempts")  # bounded: 1 + 2 retries
    assert not nonsense.ok and nonsense.error.startswith("unreadable reply after 2 answer(s): expected one of A, B, C")
    assert not refused.ok and "refused the request (400)" in refused.error
    # Every request is counted, and every failure; only successes are cached.
    assert stats["calls"] == arrivals == 2 + 2 + 3 + 2 + 2 + 2 + 3 + 2 + 1 + 1
    assert stats["calls"] == stats["items"] + stats["retries"] + stats["reasks"]
    assert stats["failures"] == 3 and stats["parse_failures"] == 4 and stats["reasks"] == 3
    assert len(_cached_rows(tmp_path)) == 7
    messages = [r.getMessage() for r in judge_log.records]
    assert "judge: HTTP 429 (Retry-After: 1); retry 1/2 in 1.0s" in messages
    assert any(m.startswith("judge: malformed response (invalid JSON") for m in messages)


def test_random_faults_at_30_percent_cost_only_their_items(tmp_path):
    texts = [f"Item {i} was founded in {1900 + i}. It lies on river number {i}." for i in range(24)]
    grades = [{"question": f"When was item {i} founded?", "gold": str(1900 + i),
               "answer": f"In {1900 + i}" if i % 3 else "No idea at all"} for i in range(24)]
    kinds = ("slow", "429", "500", "badjson", "garbage", "cut")
    with JudgeServer(fault_rate=0.3, fault_kinds=kinds, seed=7, retry_after="0.05") as server:
        with open_judge(_cfg(server, tmp_path), check=False) as judge:
            grade_results = judge.ask_many(SIMPLEQA_GRADE, grades)
            fact_results = judge.ask_many(ATOMIC_FACTS, [{"text": t} for t in texts])
            stats = judge.stats()
        faults = [a for _, _, a in server.arrivals if a != "ok"]
        arrivals = len(server.arrivals)
    results = grade_results + fact_results
    assert {a for a in faults} == set(kinds)  # every fault kind happened
    assert len(faults) >= 0.2 * arrivals
    expected_grades = ["CORRECT" if i % 3 else "INCORRECT" for i in range(24)]
    for i, result in enumerate(grade_results):
        assert result.value == (expected_grades[i] if result.ok else None)
    for text, result in zip(texts, fact_results):
        if result.ok:
            assert result.value == [line[2:] for line in good_reply(ATOMIC_FACTS.render({"text": text})).splitlines()]
    failed = sum(not r.ok for r in results)
    assert stats["failures"] == failed and stats["items"] == 48
    assert stats["calls"] == arrivals == stats["items"] + stats["retries"] + stats["reasks"]
    rows = _cached_rows(tmp_path)
    assert len(rows) == 48 - failed  # nothing failed was cached
    assert all(value not in ("null", "") for _, value in rows)
    assert 0 < sum(r.ok for r in results) and failed < 48
