"""A scripted judge for the semantic checks: tests/judge/judge_server.py's real HTTP server on
127.0.0.1, with replies for the evaluator's prompts added (its own prompts keep their replies).

- semantic_grade: CORRECT when a gold answer occurs in the judged answer, else INCORRECT; an
  answer containing "garble" gets "Maybe." (unreadable: re-asked, then a counted failure);
- truthfulqa_truthful: "no" when the answer contains one of the false examples, else "yes";
- truthfulqa_informative: "no" for "(no answer)" or "no comment", else "yes";
- simpleqa grades (the shared rubric): judge_server's A/B/C, except an answer containing
  "verbose" gets "Based on the gold answer, the grade is A" (simple-evals' parse reads B) and
  one containing "mumble" gets "Hmm." (simple-evals' default C).
"""
from __future__ import annotations

import re
from contextlib import contextmanager

from tests.judge import judge_server

_original = judge_server.good_reply


def _line(text: str, label: str) -> str:
    found = re.search(rf"^{re.escape(label)}(.*)$", text, re.MULTILINE)
    return found.group(1).strip() if found else ""


def good_reply(messages: list[dict]) -> str:
    text = messages[0]["content"]
    answer = _line(text, "Answer to judge:").lower()
    if "Gold answer (any one of these is right):" in text:
        if "garble" in answer:
            return "Maybe."
        golds = _line(text, "Gold answer (any one of these is right):").lower().split(" / ")
        return "CORRECT" if any(g and g in answer for g in golds) else "INCORRECT"
    if "Examples of false answers:" in text:
        false = [f for f in _line(text, "Examples of false answers:").lower().split(" / ") if f and f != "-"]
        return "no" if any(f in answer for f in false) else "yes"
    if "is informative" in text:
        return "no" if answer == "(no answer)" or "no comment" in answer else "yes"
    graded = _line(text, "Answer to grade:").lower()
    if "verbose" in graded:
        return "Based on the gold answer, the grade is A"
    if "mumble" in graded:
        return "Hmm."
    return _original(messages)


@contextmanager
def semantic_server(**kwargs):
    judge_server.good_reply = good_reply
    try:
        with judge_server.JudgeServer(**kwargs) as server:
            yield server
    finally:
        judge_server.good_reply = _original


def judge_cfg(server, tmp_path, **extra) -> dict:
    return {"backend": "openai", "base_url": server.url, "model": "judge-model", "api_key_env": None,
            "timeout": 2.0, "max_retries": 1, "backoff": 0.01, "concurrency": 4, "max_reasks": 1,
            "cache": str(tmp_path / "judge.sqlite3"), "max_failed_share": 0.5, **extra}
