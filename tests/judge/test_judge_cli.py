"""`harness judge check|ask` against the scripted judge on 127.0.0.1."""
from __future__ import annotations

import json
import socket

from factrl.harness.engine.cli import main as cli_main
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


def test_credentials_in_the_url_never_reach_the_terminal_and_never_replace_the_key():
    """`harness judge ask` in a real process (its logging.basicConfig(INFO) turns httpx's request
    log on): the URL's user:password is not printed; with a key set too, the combination is
    refused in one line (httpx would send Basic auth and drop the Bearer key)."""
    from tests.helpers import harness

    item = json.dumps({"question": "Capital of France?", "gold": "Paris", "answer": "Paris"})
    with JudgeServer() as server:
        url = server.url.replace("http://", "http://user:password@")
        env = {"OPENAI_API_KEY": ""}
        done = harness("judge", "ask", "simpleqa_grade", item, *_openai(url), env=env)
        assert done.returncode == 0, done.stderr
        assert "HTTP Request: POST http://***REDACTED***@127.0.0.1:" in done.stderr  # the line stays
        assert "password" not in done.stdout + done.stderr
        assert server.headers_seen[-1].startswith("Basic ")  # the URL's credentials, as asked
        sent = len(server.headers_seen)
        refused = harness("judge", "ask", "simpleqa_grade", item, *_openai(url), env={"OPENAI_API_KEY": "sk-SECRET"})
        assert refused.returncode == 2 and len(server.headers_seen) == sent
        assert refused.stderr.strip().splitlines() == [
            "harness judge: error: judge: http://***REDACTED***@127.0.0.1:"
            f"{server.server_address[1]}/v1 carries user:password and OPENAI_API_KEY (judge.api_key_env) holds an "
            "API key; the HTTP client would send the URL's Basic credentials and never the key. Drop the "
            "credentials from the URL, or unset the key"]
        assert "sk-SECRET" not in refused.stdout + refused.stderr
