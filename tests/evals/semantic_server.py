"""A scripted judge for the judged evaluations: tests/judge/judge_server.py's real HTTP server on
127.0.0.1, with replies for the evaluator's prompts added (its own prompts keep their replies).
Model output is read back from its material blocks, as a judge would see it.

- semantic_grade: CORRECT when a gold answer occurs in the judged answer, else INCORRECT; an
  answer containing "garble" gets "Maybe." (unreadable: re-asked, then a counted failure);
- truthfulqa_truthful: "no" when the answer contains one of the false examples, else "yes";
- truthfulqa_informative: "no" for "(no answer)" or "no comment", else "yes";
- SimpleQA grades (simple-evals' template and the short rubric): "A" when the gold occurs in the
  graded text, "C" for "I don't know", else "B"; except graded text containing "verbose" gets
  "Based on the gold target, the grade is A" (simple-evals' parse reads B), "mumble" gets
  "Hmm." (simple-evals' default C) and "shout" gets the word "CORRECT" (released parse: C);
- verbatim_claims: one "- " line per sentence of >= 3 words, or NONE;
- factscore_breakdown: "- <the sentence>" (a sentence containing "Hmm" gets "- " only, an
  empty last fact: unreadable).
"""
from __future__ import annotations

import re
from contextlib import contextmanager

from factrl.harness.services.judge import find_material
from tests.judge import judge_server

_original = judge_server.good_reply


def _line(text: str, label: str) -> str:
    """The last line that starts with `label` (simple-evals' template has examples above the item)."""
    found = re.findall(rf"^{re.escape(label)}(.*)$", text, re.MULTILINE)
    return found[-1].strip() if found else ""


def _material(text: str) -> str:
    blocks = find_material(text)
    return blocks[0][1] if blocks else "(no answer)"


def _grade(golds: list[str], graded: str) -> str:
    graded = graded.lower()
    if "verbose" in graded:
        return "Based on the gold target, the grade is A"
    if "mumble" in graded:
        return "Hmm."
    if "shout" in graded:
        return "CORRECT"
    if "don't know" in graded:
        return "C"
    return "A" if any(g and g.lower() in graded for g in golds) else "B"


def good_reply(messages: list[dict]) -> str:
    text = next(m["content"] for m in messages if m["role"] == "user")  # the item, not a re-ask
    answer = _material(text).lower()
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
    if "Gold target:" in text:  # simple-evals' template
        return _grade([_line(text, "Gold target:")], answer)
    if "Answer to grade:" in text:  # the short rubric
        return _grade(_line(text, "Gold answer:").split(" / "), _line(text, "Answer to grade:"))
    if "List the atomic claims" in text:
        sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", _material(text)) if len(s.split()) >= 3]
        return "\n".join(f"- {s}" for s in sentences) if sentences else "NONE"
    if "Please breakdown the following sentence" in text:
        sentence = find_material(text)[-1][1]
        return "- " if "Hmm" in sentence else f"- {sentence}"
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
