"""benchmarks/gpu_step.py: the paper-shape settings it composes, and a real tiny run on the CPU."""
from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_step.py"


def _script():
    spec = importlib.util.spec_from_file_location("gpu_step", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_paper_shape_composes_the_paper_batch_on_random_llama_weights(tmp_path):
    from factrl.harness.config import compose
    from factrl.harness.memory_plan import plan_for_config

    gpu_step = _script()
    args = argparse.Namespace(shape="paper", steps=2, model="llama-3.2-3b")
    cfg = compose(gpu_step.overrides(args, tmp_path / "index", use_vllm=False))
    assert cfg.model.source == "random" and cfg.model.tokenizer_from == "tiny-llama" and cfg.model.dtype == "bfloat16"
    assert cfg.model.architecture.hidden_size == 3072 and cfg.model.get("shrink") is None
    train = cfg.train
    assert (train.questions_per_step, train.completions_per_question, train.max_completion_length) == (3, 16, 1000)
    assert (train.micro_batch_size, train.gradient_checkpointing, cfg.lora.r) == (4, False, 128)
    assert cfg.method.extractor.backend == "heuristic" and cfg.method.lambda_c == 1.0
    assert cfg.corpus.index_dir == str(tmp_path / "index") and cfg.corpus.tokenizer == "tiny-llama"
    assert plan_for_config(cfg).fits()


@pytest.mark.slow
def test_tiny_shape_runs_both_variants_through_the_engine(tmp_path):
    """In-process (the suite has the imports already): about 20 s on 2 loaded cores, the fixture
    index and 2 x 1 GRPO step on a 2-layer Llama of the paper model's class."""
    out = tmp_path / "gpu_step.txt"
    assert _script().main(["--shape", "tiny", "--steps", "1", "--out", str(out)]) == 0
    text = out.read_text()
    assert "rollout=hf" in text and "model: llama" in text and "LoRA r 4" in text
    for variant in ("corver:", "response-only:"):
        assert variant in text
    steps = [line for line in text.splitlines() if line.strip().startswith("step 1:")]
    assert len(steps) == 2 and all("completion tokens" in s and "tok/s" in s for s in steps)
    assert text.count("peak memory") >= 2
    assert "CorVer / response-only, last step: step time" in text and "gpu_step: done in" in text


def test_paper_shape_without_cuda_says_so(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA machine runs the paper shape for real")
    out = tmp_path / "o.txt"
    assert _script().main(["--shape", "paper", "--out", str(out)]) == 2
    assert "needs a CUDA GPU" in out.read_text()
