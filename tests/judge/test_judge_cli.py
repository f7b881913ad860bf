"""`harness judge check|ask` against the scripted judge on 127.0.0.1."""
from __future__ import annotations

import json
import socket

from factrl.harness.cli import main as cli_main
from tests.judge.judge_server import JudgeServer


def _openai(url: str) -> list[str]:
    return ["judge=openai", f"judge.base_url={url}", "judge.model=judge-model", "judge.cache=null"]


def test_ask_prints_the_parsed_value_and_check_passes(capsys):
    with JudgeServer() as server:
        item = json.dumps({"question": "Capital of France?", "gold": "Paris", "answer": "Paris, surely"})
        assert cli_main(["judge", "ask", "simpleqa_grade", item, *_openai(server.url)]) == 0
        printed = json.loads(capsys.readouterr().out)
        assert printed == {"ok": True, "value": "CORRECT", "error": None, "cached": False, "attempts": 1, "reasks": 0}
        assert cli_main(["judge", "check", *_openai(server.url)]) == 0
        assert capsys.readouterr().out.startswith("judge ok: judge-model at http://127.0.0.1:")


def test_bad_input_is_one_line_with_the_fix(capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert cli_main(["judge", "check", *_openai(f"http://127.0.0.1:{port}/v1"), "judge.max_retries=0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"harness judge: error: judge.base_url=http://127.0.0.1:{port}/v1 does not answer")
    assert cli_main(["judge", "ask", "grade", "{}", "judge=none"]) == 2
    err = capsys.readouterr().err
    assert "unknown judge prompt 'grade'; valid: simpleqa_grade, atomic_facts, or module:NAME" in err
    with JudgeServer() as server:
        assert cli_main(["judge", "ask", "atomic_facts", '{"txt": "x"}', *_openai(server.url)]) == 2
    assert "judge prompt atomic_facts needs item['text']; add it to the item." in capsys.readouterr().err
