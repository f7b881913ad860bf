"""The openai backend against a real HTTP server on 127.0.0.1 (tests/evals/openai_server.py)."""
from __future__ import annotations

import pytest

from factrl.harness.core.errors import HarnessError
from factrl.harness.services.models import ModelIdentity

from factrl.evals.backends import BackendError, Decoding, Request, build_backend
from factrl.evals.generate import SetJob, generate_sets, read_generations
from factrl.evals.loaders import Record
from factrl.evals.sets import EvalSet
from tests.evals.openai_server import ScriptedServer

IDENTITY = ModelIdentity("served", "org/served-model", "main", "0" * 64, "/nowhere")
SECRET = "sk-test-secret-value"


@pytest.fixture
def server():
    with ScriptedServer() as srv:
        yield srv


def _backend(server, monkeypatch, **settings):
    monkeypatch.setenv("TEST_KEY", SECRET)
    config = {"base_url": server.url, "api_key_env": "TEST_KEY", "concurrency": 4, "timeout": 0.5,
              "max_retries": 2, "backoff": 0.01, **settings}
    model_cfg = {"system_role": True, "enable_thinking": None}
    return build_backend("openai", IDENTITY, model_cfg, Decoding.from_mapping(max_new_tokens=32), settings=config)


def test_generates_in_any_order_under_the_callers_indexes(server, monkeypatch):
    backend = _backend(server, monkeypatch)
    requests = [Request(f"q{i}", "SYSTEM") for i in range(12)]
    results = dict(backend.generate(requests))
    assert sorted(results) == list(range(12))
    assert all(results[i].text == f"<answer>q{i}</answer>" and results[i].n_tokens == 3 for i in range(12))
    body = server.bodies[0]
    assert body["model"] == "org/served-model" and body["max_tokens"] == 32 and body["temperature"] == 0.0
    assert body["messages"][0] == {"role": "system", "content": "SYSTEM"}
    assert server.headers_seen[0] == f"Bearer {SECRET}"  # key from the environment


def test_retries_a_500_and_a_timeout_then_succeeds(server, monkeypatch):
    server.failures = {"flaky": ["500", "500"], "slow": ["slow"]}
    backend = _backend(server, monkeypatch)
    results = dict(backend.generate([Request("flaky", "S"), Request("slow", "S"), Request("fine", "S")]))
    assert [results[i].text for i in range(3)] == ["<answer>flaky</answer>", "<answer>slow</answer>",
                                                    "<answer>fine</answer>"]
    attempts = [[m for m in b["messages"] if m["role"] == "user"][-1]["content"] for b in server.bodies]
    assert attempts.count("flaky") == 3 and attempts.count("slow") == 2 and attempts.count("fine") == 1


def test_gives_up_after_bounded_retries_and_keeps_finished_samples(server, monkeypatch, tmp_path):
    server.failures = {"q1": ["500"] * 10}
    records = [Record(str(i), f"q{i}", ("x",)) for i in range(4)]
    job = SetJob(EvalSet("s", "closed_book", records, "t", None, "1"), tmp_path / "s")
    with pytest.raises(BackendError, match=r"1 of 4 requests .* failed .*rerun to resume"):
        generate_sets([job], system="S", descriptor={"backend": "openai"},
                      make_backend=lambda: _backend(server, monkeypatch, max_retries=1))
    assert set(read_generations(job.path)) == {"0", "2", "3"}  # finished samples were written
    assert [b["messages"][-1]["content"] for b in server.bodies].count("q1") == 2
    server.failures = {}
    stats = generate_sets([job], system="S", descriptor={"backend": "openai"},
                          make_backend=lambda: _backend(server, monkeypatch))
    assert stats["s"] == {"resumed": 3, "cached": 0, "generated": 1}
    assert set(read_generations(job.path)) == {"0", "1", "2", "3"}
    assert SECRET not in (tmp_path / "s" / "generation.json").read_text() + job.path.read_text()


def test_client_errors_fail_at_once(server, monkeypatch):
    server.failures = {"q": ["400", "400", "400"]}
    with pytest.raises(HarnessError, match=r"refused the request \(400\)"):
        dict(_backend(server, monkeypatch).generate([Request("q", "S")]))
    assert len(server.bodies) == 1


def test_sampling_and_vllm_extras_go_in_the_body(server, monkeypatch):
    monkeypatch.setenv("TEST_KEY", SECRET)
    decoding = Decoding.from_mapping(do_sample=True, temperature=0.6, top_p=0.95, top_k=20, presence_penalty=1.5,
                                      repetition_penalty=1.02, max_new_tokens=8, seed=42)
    backend = build_backend("openai", IDENTITY, {"system_role": False, "enable_thinking": True}, decoding,
                            settings={"base_url": server.url, "api_key_env": "TEST_KEY", "model": "adapter"})
    dict(backend.generate([Request("q", "SYS")]))
    body = server.bodies[0]
    assert body["model"] == "adapter" and body["temperature"] == 0.6 and body["top_p"] == 0.95
    assert body["presence_penalty"] == 1.5 and body["seed"] == 42
    assert body["top_k"] == 20 and body["repetition_penalty"] == 1.02  # extra_body fields, top level on the wire
    assert body["chat_template_kwargs"] == {"enable_thinking": True}
    assert body["messages"] == [{"role": "user", "content": "SYS\n\nq"}]  # no system role: folded in


def test_evaluate_through_the_openai_backend(server, monkeypatch, tmp_path):
    from factrl.harness.engine.config import compose

    from factrl.evals import evaluate

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    cfg = compose(["model=tiny-llama", "eval=demo", "eval.backend=openai", f"eval.openai.base_url={server.url}",
                   "eval.openai.model=served-adapter", "eval.cache=false", "eval.limit=3"])
    result = evaluate(cfg, identity=IDENTITY, out_dir=tmp_path)
    doc = result["sets"]["demo"]
    assert doc["generation"]["backend"] == "openai" and doc["generation"]["counts"]["generated"] == 3
    assert doc["generation"]["backend_settings"]["base_url"] == server.url
    assert doc["metrics"]["format_rate"]["value"] == 1.0  # the server answers in tags
    assert {b["model"] for b in server.bodies} == {"served-adapter"}
    written = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert SECRET not in written


def test_demonstration_and_response_prefix_on_vllm_chat_continue(server, monkeypatch):
    # Opt-in (the default is the completions endpoint, which any server speaks).
    monkeypatch.setenv("TEST_KEY", SECRET)
    model_cfg = {"system_role": True, "demonstration": True, "response_prefix": "<think>"}
    backend = build_backend("openai", IDENTITY, model_cfg, Decoding.from_mapping(max_new_tokens=8),
                            settings={"base_url": server.url, "api_key_env": "TEST_KEY",
                                      "prefix_endpoint": "chat-continue"})
    dict(backend.generate([Request("q", "SYS")]))
    body = server.bodies[0]
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert body["messages"][-1] == {"role": "assistant", "content": "<think>"}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
