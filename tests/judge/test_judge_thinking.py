"""Judge thinking against a real HTTP judge on 127.0.0.1 (tests/judge/judge_server.py): the setting
reaches the server as `chat_template_kwargs`, a prompt's own pin wins over the group's, a server
that refuses the field is asked without it, and a leaked thinking block is stripped and counted."""
from __future__ import annotations

import pytest

from factrl.evals.factscore.prompts import VERBATIM_CLAIMS
from factrl.harness.core.errors import ConfigError
from factrl.harness.services.judge import SIMPLEQA_GRADE, ParseError, open_judge
from factrl.harness.services.judge.settings import read_settings
from factrl.harness.services.judge.thinking import strip_thinking
from tests.judge.judge_server import JudgeServer


def _cfg(server, tmp_path, **extra):
    return {"backend": "openai", "base_url": server.url, "model": "judge-model", "api_key_env": None, "timeout": 2.0,
            "max_retries": 1, "backoff": 0.01, "concurrency": 2, "max_reasks": 1, "reply_mode": "text",
            "cache": str(tmp_path / "judge.sqlite3"), "max_failed_share": 1.0, **extra}


def _grades(answers):
    return [{"question": "What is the capital of France?", "gold": "Paris", "answer": a} for a in answers]


def _kwargs(server, prompt_name_part: str):
    """chat_template_kwargs of every chat request whose prompt contains `prompt_name_part`."""
    return [b.get("chat_template_kwargs") for b in server.bodies
            if prompt_name_part in b["messages"][0]["content"]]


def test_the_setting_reaches_the_server_and_the_component(tmp_path):
    with JudgeServer(thinking="qwen3") as server, \
            open_judge(_cfg(server, tmp_path, enable_thinking=False), run_dir=tmp_path / "run") as judge:
        results = judge.ask_many(SIMPLEQA_GRADE, _grades(["Paris", "Lyon"]))
        entry, stats = judge.describe(), judge.stats()
    assert [r.value for r in results] == ["CORRECT", "INCORRECT"]
    assert _kwargs(server, "Answer to grade") == [{"enable_thinking": False}] * 2
    assert entry["thinking"] == {"enable_thinking": False, "prompts": {}, "kwarg": "sent"}
    assert stats["thinking_stripped"] == 0  # thinking off: the server sent no block


def test_a_leaked_thinking_block_is_stripped_before_parsing_and_counted(tmp_path):
    # No setting: nothing is sent and the Qwen3 server thinks (its template's default), in the content.
    with JudgeServer(thinking="qwen3") as server, \
            open_judge(_cfg(server, tmp_path), run_dir=tmp_path / "run") as judge:
        results = judge.ask_many(SIMPLEQA_GRADE, _grades(["Paris", "I don't know", "Lyon"]))
        entry, stats = judge.describe(), judge.stats()
    assert _kwargs(server, "Answer to grade") == [None] * 3
    assert [r.value for r in results] == ["CORRECT", "NOT_ATTEMPTED", "INCORRECT"]
    assert stats["thinking_stripped"] == 3 and stats["parse_failures"] == 0
    assert entry["thinking"] == {"enable_thinking": None, "prompts": {}, "kwarg": "not sent"}
    with pytest.raises(ParseError):  # what the parser made of the raw reply before
        SIMPLEQA_GRADE.parse("<think>\nLet me check.\n</think>\n\nA")


def test_corvers_claim_extractor_pins_thinking_off_over_the_groups_setting(tmp_path):
    """CorVer §A.2: the FActScore extractor runs "with thinking disabled"; the prompt pins it, so a
    judge group that thinks still asks the extractor without thinking."""
    text = {"text": "Paris is the capital of France. The Seine flows through it."}
    with JudgeServer(thinking="qwen3") as server, \
            open_judge(_cfg(server, tmp_path, enable_thinking=True), run_dir=tmp_path / "run") as judge:
        claims = judge.ask(VERBATIM_CLAIMS, text)
        grade = judge.ask(SIMPLEQA_GRADE, _grades(["Paris"])[0])
        entry, stats = judge.describe(), judge.stats()
    assert claims.value == ["Paris is the capital of France.", "The Seine flows through it."]
    assert grade.value == "CORRECT"
    assert _kwargs(server, "List the atomic claims") == [{"enable_thinking": False}]
    assert _kwargs(server, "Answer to grade") == [{"enable_thinking": True}]
    assert entry["thinking"] == {"enable_thinking": True, "prompts": {"verbatim_claims": False}, "kwarg": "sent"}
    assert stats["thinking_stripped"] == 1  # the grade's thinking, not the extractor's


def test_a_server_that_refuses_the_field_is_asked_without_it(tmp_path):
    with JudgeServer(thinking="refuse") as server, \
            open_judge(_cfg(server, tmp_path, enable_thinking=False), run_dir=tmp_path / "run") as judge:
        first = judge.ask(SIMPLEQA_GRADE, _grades(["Paris"])[0])
        later = judge.ask_many(SIMPLEQA_GRADE, _grades(["Lyon", "Paris"]))
        entry, stats = judge.describe(), judge.stats()
    assert first.ok and first.value == "CORRECT" and [r.value for r in later] == ["INCORRECT", "CORRECT"]
    # refused once (400), asked again without it; the item asked under the refused key was not
    # cached, so "Paris" is asked again under the key without the argument
    assert _kwargs(server, "Answer to grade") == [{"enable_thinking": False}, None, None, None]
    assert entry["thinking"]["kwarg"] == "refused"
    assert stats["failures"] == 0


def test_an_unclosed_thinking_block_is_an_unreadable_reply(tmp_path):
    with JudgeServer(reply_for=lambda messages: "<think>\nI should think about this for a long") as server, \
            open_judge(_cfg(server, tmp_path, max_reasks=0), run_dir=tmp_path / "run") as judge:
        result = judge.ask(SIMPLEQA_GRADE, _grades(["Paris"])[0])
        stats = judge.stats()
    assert not result.ok and stats["parse_failures"] == 1 and stats["thinking_stripped"] == 0


@pytest.mark.parametrize("reply, expected, stripped", [
    ("<think>\nplan\n</think>\n\nA", "A", True),
    ("plan only, the template opened the block\n</think>\n\n- a claim", "- a claim", True),
    ("<think>\n\n</think>\n\nB", "B", True),  # thinking off, but an empty block echoed
    ("A", "A", False),
    ("<think>\nnever closed", "<think>\nnever closed", False),
])
def test_strip_thinking(reply, expected, stripped):
    assert strip_thinking(reply) == (expected, stripped)


def test_the_setting_is_checked():
    with pytest.raises(ConfigError, match="judge.enable_thinking"):
        read_settings({"backend": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m",
                       "enable_thinking": "yes"})
    assert read_settings({"backend": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m"}).enable_thinking \
        is None
    read_settings({"backend": "reference", "enable_thinking": False})  # accepted, no effect
