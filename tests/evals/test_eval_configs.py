"""The eval config group: every option composes, every key is documented, bad settings are refused."""
from __future__ import annotations

from importlib import resources

import pytest

from factrl.harness.engine.config import compose, group_options
from factrl.harness.core.errors import HarnessError

from factrl.evals.settings import EvalSettings


def test_every_eval_option_composes_into_valid_settings():
    options = group_options("eval")
    assert {"demo", "closed-book", "truthfulqa", "multihop", "base"} <= set(options)
    for option in options:
        overrides = [f"eval={option}"] + (["eval.sets=[demo]"] if option == "base" else [])
        settings = EvalSettings.from_config(compose(overrides).eval)
        assert settings.sets and settings.backend == "hf" and settings.scorer == "default"
    closed = EvalSettings.from_config(compose(["eval=closed-book"]).eval)
    assert closed.sets == ["triviaqa", "nq_open", "popqa", "simpleqa", "truthfulqa"] and closed.limit is None
    # Per-set paths are plain overrides (no `+`), because base.yaml lists every set.
    cfg = compose(["eval=closed-book", "eval.data.triviaqa=/data/tqa.json", "eval.revision.popqa=abc"])
    assert cfg.eval.data.triviaqa == "/data/tqa.json" and cfg.eval.revision.popqa == "abc"


def test_every_key_of_the_base_file_is_commented():
    text = resources.files("factrl.configs").joinpath("eval/base.yaml").read_text()
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or line.startswith("  ") and stripped.endswith(": null"):
            continue  # per-set entries of data/aliases/revision are described by their parent's comment
        assert "#" in line, f"undocumented key in configs/eval/base.yaml: {line!r}"


@pytest.mark.parametrize("overrides, message", [
    (["eval.sets=[nq-open]"], "Did you mean 'nq_open'"),
    (["eval.backend=vlm"], "eval.backend='vlm'"),
    (["eval.limit=0"], "eval.limit=0"),
    (["eval.scorer=corver_official"], "Did you mean 'corver-official'"),
    (["eval=multihop", "eval.scorer=corver-official"], "closed-book sets and TruthfulQA only"),
    (["eval.sets=[]"], "eval.sets is empty"),
])
def test_bad_settings_fail_with_a_fix(overrides, message):
    with pytest.raises(HarnessError, match=message):
        EvalSettings.from_config(compose(["eval=demo", *overrides]).eval)


def test_vllm_backend_needs_vllm_and_a_gpu():
    """Built for real on a CUDA machine with vLLM 0.31; here it must fail with a clear message."""
    from factrl.harness.services.models import ModelIdentity

    from factrl.evals.backends import Decoding, build_backend

    identity = ModelIdentity("m", "org/m", "main", "0", "/nowhere")
    try:
        import torch
        import vllm  # noqa: F401

        if torch.cuda.is_available():
            pytest.skip("vLLM and CUDA are present: the GPU test below covers this backend")
    except ImportError:
        pass
    with pytest.raises(HarnessError, match="backend=vllm needs"):
        build_backend("vllm", identity, {"dtype": "float32"}, Decoding.from_mapping())


@pytest.mark.gpu
def test_vllm_backend_generates_with_an_adapter(tmp_path):
    """GPU only: a small random Llama with head_dim 64 (tiny-llama's head_dim of 4 fits no vLLM
    attention kernel) through vLLM's offline engine, base and with a LoRA adapter (not merged)."""
    import importlib.util
    from pathlib import Path

    torch = pytest.importorskip("torch")
    pytest.importorskip("vllm", reason="vLLM is not installed (pip install 'factrl-harness[gpu]')")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from peft import LoraConfig, get_peft_model

    from factrl.harness.services.models import load_model, resolve

    from factrl.evals.backends import Decoding, Request, build_backend

    assets = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_smoke_assets.py"
    spec = importlib.util.spec_from_file_location("gpu_smoke_assets", assets)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.small_llama(tmp_path / "model")
    cfg = compose(["model=tiny-llama", f"model.path={tmp_path / 'model'}", "model.dtype=bfloat16"])
    identity = resolve(cfg.model)
    peft_model = get_peft_model(load_model(identity, cfg.model, device="cpu"),
                                LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
    peft_model.save_pretrained(tmp_path / "adapter")
    for adapter in (None, tmp_path / "adapter"):
        backend = build_backend("vllm", identity, cfg.model, Decoding.from_mapping(max_new_tokens=8), adapter=adapter,
                                settings={"gpu_memory_utilization": 0.3, "enforce_eager": True, "chunk_size": 2})
        try:
            results = dict(backend.generate([Request(f"question {i}", "S") for i in range(5)]))
        finally:
            backend.close()
        assert sorted(results) == [0, 1, 2, 3, 4] and all(r.n_tokens <= 8 for r in results.values())


def test_the_vllm_share_is_lowered_to_what_another_process_left_free():
    """vLLM refuses a gpu_memory_utilization above the free memory (e.g. a training process still
    holds part of the GPU); the backend asks for what is free instead, or stops with the reason."""
    from factrl.evals.backends.settings import VLLMEvalSettings
    from factrl.evals.backends.vllm import gpu_share
    from factrl.harness.core.errors import HarnessError

    gib = 2**30
    configured = VLLMEvalSettings.from_mapping().gpu_memory_utilization
    assert configured == 0.85  # configs/eval/base.yaml
    assert gpu_share(configured, 80 * gib, 80 * gib) == 0.85  # an idle GPU: the configured share
    assert gpu_share(0.5, 60 * gib, 80 * gib) == 0.5
    assert gpu_share(configured, 61 * gib, 80 * gib) == round(61 / 80 - 0.02, 3)  # 8B training left 61 GiB free
    with pytest.raises(HarnessError, match="only 4.0 of 80.0 GiB of the GPU are free"):
        gpu_share(configured, 4 * gib, 80 * gib)
