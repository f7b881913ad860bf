"""The openai backend under injected faults, on servers that refuse vLLM-only fields.

Every server here is a real HTTP server on 127.0.0.1 (tests/evals/openai_server.py) that
injects each fault kind deterministically, by question.
"""
from __future__ import annotations

import json
import logging
import re
import sqlite3

import pytest

from factrl.harness.engine.cli import main as cli_main
from factrl.harness.engine.config import compose
from factrl.harness.core.errors import HarnessError
from factrl.harness.services.models import ModelIdentity, load_tokenizer, resolve
from factrl.harness.core.prompts import format_prompt
from factrl.harness.core.rundir import read_json

from factrl.evals.backends import BackendError, Decoding, Request, build_backend
from factrl.evals.backends.openai import bos_to_strip
from factrl.harness.services.judge.transport import refused_fields
from factrl.evals.cache import ResponseCache
from factrl.evals.generate import SetJob, generate_sets, read_generations
from factrl.evals.loaders import Record
from factrl.evals.sets import EvalSet, load_set
from tests.evals.openai_server import ScriptedServer
from tests.helpers import harness

IDENTITY = ModelIdentity("served", "org/served-model", "main", "0" * 64, "/nowhere")
PASSWORD = "pw-secret-in-url"


@pytest.fixture
def evals_log(caplog, monkeypatch):
    """Records of the factrl.evals logger even when an in-process CLI run turned propagation off."""
    monkeypatch.setattr(logging.getLogger("factrl"), "propagate", True)
    caplog.set_level(logging.DEBUG, logger="factrl.evals")
    return caplog


def _backend(server, model_cfg=None, **settings):
    config = {"base_url": server.url, "concurrency": 4, "timeout": 0.5, "max_retries": 2, "backoff": 0.01,
              **settings}
    return build_backend("openai", IDENTITY, model_cfg or {"system_role": True}, Decoding.from_mapping(max_new_tokens=16),
                         settings=config)


def test_harness_eval_survives_faults_reports_them_and_resumes(tmp_path, capsys):
    questions = [r.question for r in load_set("demo", limit=8).records]
    with ScriptedServer(strict=True) as server:  # strict: refuses vLLM-only fields, as transformers serve
        server.questions = questions
        # A 2 s timeout leaves loaded CI machines room for the healthy replies; "slow" takes 4 s.
        server.slow_seconds = 4.0
        server.failures = {questions[0]: ["badjson"], questions[1]: ["nochoices", "nochoices"],
                           questions[2]: ["null", "null"], questions[3]: ["429"], questions[4]: ["500"],
                           questions[5]: ["slow", "slow"], questions[6]: ["nonstring"]}
        url = server.url.replace("http://", f"http://user:{PASSWORD}@")
        # smollm2-135m has response_prefix "<think>": its requests go to /completions.
        args = ["eval", "model=smollm2-135m", "eval=demo", "eval.limit=8", "eval.backend=openai",
                f"eval.openai.base_url={url}", "eval.openai.max_retries=1", "eval.openai.timeout=2",
                "eval.openai.backoff=0.05", "eval.cache=false", f"output_dir={tmp_path}"]
        first = harness(*args, timeout=120)
        assert first.returncode == 2, first.stderr
        assert "Traceback" not in first.stderr
        assert re.fullmatch(r"harness eval: error: 3 of 8 requests to http://\*\*\*REDACTED\*\*\*@127\.0\.0\.1:\d+/v1 "
                            r"failed \(first: .+\); finished samples are saved, rerun to resume\.",
                            first.stderr.strip().splitlines()[-1])
        (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
        demo = run / "eval" / "demo"
        rows = read_generations(demo / "generations.jsonl")
        assert sorted(r["question"] for r in rows.values()) == sorted(questions[i] for i in (0, 3, 4, 6, 7))
        assert all(r["completion"] == f"<answer>{r['question']}</answer>" for r in rows.values())  # nothing malformed
        (t429, first_action), (t_retry, _) = server.attempts(questions[3])
        assert first_action == "429" and t_retry - t429 >= 1.0  # Retry-After: 1 honoured
        assert len(server.attempts(questions[1])) == 2  # bounded: max_retries=1
        assert set(server.paths) == {"/v1/completions"}
        assert read_json(run / "run.json")["status"] == "failed"
        log_text = (run / "run.log").read_text()
        assert "HTTP 429 (Retry-After: 1); retry 1/1" in log_text and "malformed response (no choices)" in log_text

        # The rerun, in this process (faster): resumes and completes.
        assert cli_main(args) == 0
        second = capsys.readouterr()
        assert "generating (openai)" in second.err and "answer/s" in second.err  # the progress bar
    assert len(read_generations(demo / "generations.jsonl")) == 8
    counts = read_json(demo / "metrics.json")["generation"]["counts"]
    assert counts == {"resumed": 5, "cached": 0, "generated": 3}
    assert "***REDACTED***@127.0.0.1" in (run / "config.yaml").read_text()
    written = "".join(p.read_text() for p in run.rglob("*") if p.is_file())
    assert PASSWORD not in written + first.stdout + first.stderr + second.out + second.err


def test_malformed_answers_are_retried_counted_and_never_cached(tmp_path, evals_log):
    records = [Record(str(i), q, ("x",)) for i, q in enumerate(["always-null", "bad-once", "limited", "fine"])]
    job = SetJob(EvalSet("s", "closed_book", records, "t", None, "1"), tmp_path / "s")
    cache = ResponseCache(tmp_path / "cache.sqlite", {"scope": 1})
    with ScriptedServer() as server:
        server.failures = {"always-null": ["null"] * 3, "bad-once": ["badjson"], "limited": ["429"]}
        with pytest.raises(BackendError, match=r"^1 of 4 requests .* failed \(first: malformed response "
                                               r"\(message content is null\) after 3 attempts\)"):
            generate_sets([job], system="S", descriptor={"backend": "openai"}, cache=cache,
                          make_backend=lambda: _backend(server))
        (t429, _), (t_retry, _) = server.attempts("limited")
    assert t_retry - t429 >= 1.0
    assert set(read_generations(job.path)) == {"1", "2", "3"}
    rows = sqlite3.connect(tmp_path / "cache.sqlite").execute("SELECT text FROM responses").fetchall()
    assert sorted(t for (t,) in rows) == ["<answer>bad-once</answer>", "<answer>fine</answer>",
                                          "<answer>limited</answer>"]
    messages = [r.getMessage() for r in evals_log.records]
    assert "openai backend: HTTP 429 (Retry-After: 1); retry 1/2 in 1.0s" in messages
    assert sum("malformed response (message content is null)" in m for m in messages) == 2
    cache.close()


def test_connection_cut_mid_body_and_5xx_are_retried(evals_log):
    with ScriptedServer() as server:
        server.failures = {"cut": ["cut"], "busy": ["503", "500"], "shape": ["nochoices"]}
        results = dict(_backend(server).generate([Request(q, "S") for q in ("cut", "busy", "shape")]))
    assert [results[i].text for i in range(3)] == ["<answer>cut</answer>", "<answer>busy</answer>",
                                                    "<answer>shape</answer>"]
    assert [a for _, a in server.attempts("busy")] == ["503", "500", "ok"]


def test_a_refusal_ends_the_call_after_in_flight_answers_are_yielded():
    with ScriptedServer() as server:
        server.failures = {"bad": ["400"]}
        got = []
        with pytest.raises(HarnessError, match=r"refused the request \(400\): refused field\(s\): model; bad model"):
            for item in _backend(server).generate([Request(q, "S") for q in ("bad", "a", "b", "c")]):
                got.append(item)
    assert sorted(i for i, _ in got) == [1, 2, 3]


def test_vllm_only_fields_are_opt_in_and_a_422_names_them():
    model_cfg = {"system_role": True, "response_prefix": "<think>"}
    with ScriptedServer(strict=True) as server:
        backend = _backend(server, model_cfg, prefix_endpoint="chat-continue")
        with pytest.raises(HarnessError, match=r"refused the request \(422\): refused field\(s\): "
                                               r"(add_generation_prompt, continue_final_message|"
                                               r"continue_final_message, add_generation_prompt);"):
            dict(backend.generate([Request("q", "S")]))
    with pytest.raises(HarnessError, match="eval.openai.prefix_endpoint='chat'"):
        _backend(server, model_cfg, prefix_endpoint="chat")


def test_fastapi_validation_errors_name_their_fields():
    body = {"detail": [{"type": "extra_forbidden", "loc": ["body", "top_k"], "msg": "Extra inputs are not permitted"},
                       {"type": "missing", "loc": ["body", "messages", 0, "content"], "msg": "Field required"}]}
    assert refused_fields(body) == ["top_k", "messages.0.content"]
    assert refused_fields({"error": {"message": "no", "param": "model"}}) == ["model"]
    assert refused_fields({"detail": "Unexpected fields in the request: {'a', 'b'}"}) == ["a", "b"]
    assert refused_fields("not json") == []


def test_a_response_prefix_goes_to_completions_with_the_models_own_template():
    cfg = compose(["model=tiny-llama", "model.response_prefix='<think>'", "model.demonstration=true"])
    identity = resolve(cfg.model)
    with ScriptedServer(strict=True) as server:  # no vLLM-only field may reach it
        server.questions = ["Who?"]
        backend = build_backend("openai", identity, cfg.model, Decoding.from_mapping(max_new_tokens=8),
                                settings={"base_url": server.url})
        assert dict(backend.generate([Request("Who?", "SYS")]))[0].text == "<answer>Who?</answer>"
    tokenizer = load_tokenizer(identity, cfg.model)
    assert server.paths == ["/v1/completions"]
    assert server.bodies[0]["prompt"] == format_prompt(tokenizer, "Who?", cfg.model, system="SYS")  # as hf builds it
    assert server.bodies[0]["prompt"].endswith("[/INST]<think>")
    assert set(server.bodies[0]) == {"model", "prompt", "max_tokens", "temperature"}

    # A tokenizer that adds its BOS itself: the prompt leaves it out, so the server's ids equal hf's.
    tokenizer.add_bos_token = True
    tokenizer.chat_template = "{{ bos_token }}" + tokenizer.chat_template
    assert bos_to_strip(tokenizer) == "<s>"
    backend.tokenizer, backend._bos = tokenizer, bos_to_strip(tokenizer)
    prompt = backend._body(Request("Who?", "SYS"))["prompt"]
    local = format_prompt(tokenizer, "Who?", cfg.model, system="SYS")
    assert local.startswith("<s>") and not prompt.startswith("<s>")
    assert tokenizer(prompt)["input_ids"] == tokenizer(local, add_special_tokens=False)["input_ids"]


def test_a_missing_tokenizer_for_the_completions_route_says_what_to_do():
    with ScriptedServer() as server:
        with pytest.raises(HarnessError, match=r"prefix_endpoint=chat-continue .* model.response_prefix=null"):
            _backend(server, {"response_prefix": "<think>"})


def test_credentials_in_base_url_are_redacted_in_config_and_metrics(tmp_path, monkeypatch):
    from factrl.harness.core.config_values import redact, to_plain

    from factrl.evals import evaluate

    with ScriptedServer() as server:
        url = server.url.replace("http://", f"http://user:{PASSWORD}@")
        cfg = compose(["model=tiny-llama", "eval=demo", "eval.backend=openai", f"eval.openai.base_url={url}",
                       "eval.cache=false", "eval.limit=2"])
        result = evaluate(cfg, identity=IDENTITY, out_dir=tmp_path)
    assert PASSWORD not in json.dumps(to_plain(cfg)) + json.dumps(result)
    assert to_plain(cfg)["eval"]["openai"]["base_url"].startswith("http://***REDACTED***@127.0.0.1:")
    assert redact({"u": "see https://a:b@h/x?q=c@d"}) == {"u": "see https://***REDACTED***@h/x?q=c@d"}
    assert PASSWORD not in "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
