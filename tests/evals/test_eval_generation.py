"""Generation with the hf backend on the tiny random Llama: order, resume, cache, adapters, the CLI."""
from __future__ import annotations

import json
import logging

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.services.models import resolve

from factrl.evals import evaluate
from factrl.evals.backends import Decoding, Request, build_backend
from factrl.evals.generate import read_generations
from factrl.evals.metrics import validate_metrics_file

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def tiny():
    """(config, identity) of tiny-llama, with the demo set cut to 8 questions of 16 tokens."""
    cfg = compose(["model=tiny-llama", "eval=demo", "eval.cache=false"])
    return cfg, resolve(cfg.model)


def _cfg(*overrides):
    return compose(["model=tiny-llama", "eval=demo", "eval.cache=false", *overrides])


def test_hf_backend_batches_longest_first_and_restores_order(tiny):
    cfg, identity = tiny
    backend = build_backend("hf", identity, cfg.model, Decoding.from_mapping(max_new_tokens=5), batch_size=2)
    questions = ["a", "a much longer question with many more words in it", "mid length question", "b"]
    forward = dict(backend.generate([Request(q, "S") for q in questions]))
    reverse = dict(backend.generate([Request(q, "S") for q in reversed(questions)]))
    assert sorted(forward) == [0, 1, 2, 3]
    for i, q in enumerate(questions):
        assert forward[i].text == reverse[len(questions) - 1 - i].text, q
        assert forward[i].n_tokens <= 5 and forward[i].finish_reason in ("stop", "length")
    assert backend.device.type == "cpu"


def test_hf_backend_applies_the_presence_penalty(tiny):
    """transformers has no presence penalty; the hf backend adds one (Qwen3-4B's preset uses 1.5)."""
    cfg, identity = tiny

    def tokens(penalty):
        decoding = Decoding.from_mapping(max_new_tokens=24, presence_penalty=penalty)
        backend = build_backend("hf", identity, cfg.model, decoding)
        (_, generation), = backend.generate([Request("Say something", "S")])
        return backend.tokenizer(generation.text, add_special_tokens=False)["input_ids"]

    plain, penalised = tokens(0.0), tokens(1e4)
    assert len(set(plain)) < len(plain)  # the random tiny model repeats itself when greedy
    assert len(set(penalised)) == len(penalised) and penalised != plain


def test_openai_settings_written_to_results_hold_no_credentials():
    from factrl.evals.provenance import backend_settings
    from factrl.evals.settings import EvalSettings

    settings = EvalSettings.from_mapping(sets=["demo"], backend="openai", openai={
        "base_url": "http://user:secret@127.0.0.1:8000/v1?token=abc", "model": "m",
        "extra_body": {"api_key": "sk-x", "top_k": 20}})
    written = backend_settings(settings, {}, None)
    assert written == {"base_url": "http://127.0.0.1:8000/v1", "model": "m",
                       "extra_body": {"api_key": "***REDACTED***", "top_k": 20}}


def test_evaluate_writes_results_and_resumes(tiny, tmp_path):
    cfg, identity = tiny
    out = tmp_path / "eval"
    result = evaluate(cfg, identity=identity, out_dir=out)
    assert result["schema"] == "factrl.run.metrics/1" and result["macro"] == {}
    doc = json.loads((out / "demo" / "metrics.json").read_text())
    validate_metrics_file(doc)
    assert doc["set"]["count"] == 8 and doc["generation"]["model"]["id"] == "embedded:tiny-llama"
    assert doc["generation"]["decoding"]["max_new_tokens"] == 16 and doc["generation"]["decoding"]["seed"] is None
    assert doc["generation"]["counts"] == {"resumed": 0, "cached": 0, "generated": 8}
    assert set(doc["metrics"]) >= {"accuracy", "accuracy_one_way", "na_rate", "refusal_rate", "empty_rate",
                                   "format_rate", "mean_answer_words"}
    samples = [json.loads(x) for x in (out / "demo" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 8 and {"id", "completion", "answer", "correct"} <= set(samples[0])

    # Interrupt: keep three finished lines and half of a fourth; the rerun generates only the rest.
    generations = out / "demo" / "generations.jsonl"
    lines = generations.read_text().splitlines(keepends=True)
    generations.write_text("".join(lines[:3]) + lines[3][:20])
    again = evaluate(cfg, identity=identity, out_dir=out)
    assert again["sets"]["demo"]["generation"]["counts"] == {"resumed": 3, "cached": 0, "generated": 5}
    assert again["sets"]["demo"]["metrics"] == result["sets"]["demo"]["metrics"]
    # A different decoding must not extend these generations.
    from factrl.harness.core.errors import DataError

    with pytest.raises(DataError, match="different decoding"):
        evaluate(_cfg("eval.max_new_tokens=4"), identity=identity, out_dir=out)


def test_greedy_responses_are_cached_sampled_never(tiny, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr("factrl.evals.runner.writable_cache_dir", lambda: tmp_path / "cache")
    _, identity = tiny
    cfg = _cfg("eval.cache=true", "eval.limit=3")
    first = evaluate(cfg, identity=identity, out_dir=tmp_path / "a")
    caplog.set_level("INFO", logger="factrl.evals")
    monkeypatch.setattr(logging.getLogger("factrl"), "propagate", True)  # a run's attach_log may have cut it
    second = evaluate(cfg, identity=identity, out_dir=tmp_path / "b")
    assert first["sets"]["demo"]["generation"]["counts"]["generated"] == 3
    assert second["sets"]["demo"]["generation"]["counts"] == {"resumed": 0, "cached": 3, "generated": 0}
    # A fully cached evaluation says where its answers came from instead of finishing silently.
    assert "nothing to generate: demo: 3 answers from the response cache, 0 resumed (eval.cache=false" in caplog.text
    made, reused = (read_generations(tmp_path / d / "demo" / "generations.jsonl") for d in ("a", "b"))
    assert {k: v["completion"] for k, v in made.items()} == {k: v["completion"] for k, v in reused.items()}
    assert all(v["cached"] for v in reused.values())
    sampled = _cfg("eval.cache=true", "eval.limit=3", "model.decoding.do_sample=true", "model.decoding.temperature=1.0")
    for folder in ("c", "d"):
        counts = evaluate(sampled, identity=identity, out_dir=tmp_path / folder)["sets"]["demo"]["generation"]["counts"]
        assert counts == {"resumed": 0, "cached": 0, "generated": 3}


def test_adapter_and_preloaded_model(tiny, tmp_path, monkeypatch):
    from peft import LoraConfig, get_peft_model

    from factrl.harness.services.models import load_model, load_tokenizer

    cfg, identity = tiny
    base = load_model(identity, cfg.model, device="cpu")
    peft_model = get_peft_model(base, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"]))
    peft_model.save_pretrained(tmp_path / "adapter")
    small = _cfg("eval.limit=2")
    result = evaluate(small, identity=identity, adapter=tmp_path / "adapter", out_dir=tmp_path / "with-adapter")
    adapter = result["sets"]["demo"]["generation"]["adapter"]
    assert adapter["path"].endswith("adapter") and len(adapter["sha256"]) == 64

    # A run passes the policy it holds: no second load.
    def no_load(*args, **kwargs):
        raise AssertionError("the backend must reuse the given model")

    monkeypatch.setattr("factrl.evals.backends.hf.load_model", no_load)
    tokenizer = load_tokenizer(identity, cfg.model)
    reused = evaluate(small, identity=identity, adapter=tmp_path / "adapter", out_dir=tmp_path / "reused",
                      model=peft_model, tokenizer=tokenizer)
    assert reused["sets"]["demo"]["metrics"]["accuracy"]["n"] == 2
    with pytest.raises(Exception, match="adapter_config.json"):
        evaluate(small, identity=identity, adapter=tmp_path, out_dir=tmp_path / "bad")


def test_harness_eval_cli(tmp_path, capsys):
    from factrl.harness.engine.cli import main

    status = main(["eval", "model=tiny-llama", "eval=demo", "eval.cache=false", "eval.limit=2",
                   f"output_dir={tmp_path}"])
    assert status == 0
    runs = list(tmp_path.glob("*-eval-tiny-llama-*"))
    assert len(runs) == 1
    summary = json.loads((runs[0] / "metrics.json").read_text())
    assert summary["sets"]["demo"]["set"]["count"] == 2
    assert json.loads((runs[0] / "run.json").read_text())["status"] == "finished"
    out = capsys.readouterr().out
    assert "demo" in out and f"wrote {runs[0]}" in out
    with pytest.raises(SystemExit) as exited:  # hydra_entry exits with the error's status
        main(["eval", "model=tiny-llama", "eval.sets=[nq-open]", f"output_dir={tmp_path}"])
    assert exited.value.code == 2
    assert "Did you mean 'nq_open'" in capsys.readouterr().err


def test_hf_fast_gives_the_same_greedy_tokens_and_is_recorded(tiny, tmp_path):
    """eval.hf_fast (merged adapter, oneDNN-prepacked linears) decodes the stock path's greedy
    tokens, with and without an adapter, and changes the recorded backend settings (so the
    response cache never mixes the two paths)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from factrl.evals.provenance import backend_settings
    from factrl.evals.settings import EvalSettings
    from factrl.harness.services.models import load_model

    cfg, identity = tiny
    questions = [Request(q, "S") for q in ("Who wrote Hamlet?", "Name a river in Spain.", "What is 2 + 2?")]
    base = load_model(identity, cfg.model, device="cpu")
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"]))
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5, generator=torch.Generator().manual_seed(3))
    for model in (load_model(identity, cfg.model, device="cpu"), peft_model):
        texts = {}
        for fast in (False, True):
            backend = build_backend("hf", identity, cfg.model, Decoding.from_mapping(max_new_tokens=12), batch_size=2,
                                    model=model, tokenizer=None, hf_fast=fast)
            assert backend.fast is fast
            texts[fast] = [g.text for _, g in sorted(backend.generate(questions))]
        assert texts[True] == texts[False]
        assert not any("forward" in vars(m) for m in model.modules() if isinstance(m, torch.nn.Linear))
    on = backend_settings(EvalSettings.from_mapping({"sets": ["demo"], "hf_fast": True}), cfg, cfg.model)
    off = backend_settings(EvalSettings.from_mapping({"sets": ["demo"], "hf_fast": False}), cfg, cfg.model)
    assert on == {**off, "hf_fast": True} and "hf_fast" not in off
