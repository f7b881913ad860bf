"""benchmarks/gpu_step.py: the paper-shape settings it composes, and a real tiny run on the CPU."""
from __future__ import annotations

import argparse
import importlib.util
import re
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
    from factrl.harness.engine.config import compose
    from factrl.harness.training.memory_plan import plan_for_config

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
    assert _script().main(["--shape", "tiny", "--steps", "1", "--out", str(out), "--max-completion-length", "6",
                           "--hbm-tbps", "0.02"]) == 0
    text = out.read_text()
    generation = next(x for x in text.splitlines() if x.startswith("generation: "))
    assert re.match(r"generation: 4 rows x 6 decode steps in [0-9.]+ s = \d+ generated tokens/s \(fast path: "
                    r"merge_lora True, prepack True, static_cache False, compile False", generation), generation
    bound = next(x for x in text.splitlines() if x.startswith("decode bound at 0.02 TB/s: "))
    assert "tokens/s (weights" in bound and "target 4,865 tokens/s" in bound
    assert "rollout=hf" in text and "model: llama" in text and "LoRA r 4" in text
    for variant in ("corver (a process", "response-only (a process"):
        assert variant in text
    steps = [line for line in text.splitlines() if line.strip().startswith("step 1:")]
    assert len(steps) == 2 and all("completion tokens" in s and "tok/s" in s for s in steps)
    assert text.count("peak memory") >= 2 and text.count("(a process of its own)") == 2
    assert "CorVer / response-only, last step: step time" in text and "gpu_step: done in" in text
    line = next(x for x in text.splitlines() if x.startswith("100 steps at the 6-token limit ~ "))
    assert re.match(r"100 steps at the 6-token limit ~ \d+:\d\d \(CorVer's last step", line)
    assert "tokens per step" in line and "of the 6-token limit" in line  # --max-completion-length reached the rollout
    projected = next(x for x in text.splitlines() if x.startswith("100 steps ~ "))  # what gpu_smoke.sh ends with
    assert re.match(r"100 steps ~ \d+:\d\d at the protocol's 1,000-token limit \(projected from the 6-token step: "
                    r"[0-9.]+ s a step", projected), projected


def test_paper_shape_without_cuda_says_so(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA machine runs the paper shape for real")
    out = tmp_path / "o.txt"
    assert _script().main(["--shape", "paper", "--out", str(out)]) == 2
    assert "needs a CUDA GPU" in out.read_text()


def test_the_comparison_options_reach_the_composed_run(tmp_path):
    """--max-completion-length, --model-path and --index-dir / --corpus-tokenizer (real lengths, weights, corpus)."""
    from factrl.harness.engine.config import compose

    gpu_step = _script()
    args = gpu_step._parser().parse_args(["--max-completion-length", "300", "--model-path", str(tmp_path / "w"),
                                          "--index-dir", str(tmp_path / "enwiki"), "--corpus-tokenizer", "smollm2-135m"])
    cfg = compose(gpu_step.overrides(args, args.index_dir, use_vllm=False))
    assert cfg.train.max_completion_length == 300 and cfg.model.path == str(tmp_path / "w")
    assert cfg.model.source != "random" and cfg.corpus.index_dir == str(tmp_path / "enwiki")
    assert cfg.corpus.tokenizer == "smollm2-135m"
    assert gpu_step._hm(65 * 100) == "1:48"


def test_variants_and_overrides_reach_the_run(tmp_path):
    """--variants picks the variants (the GPU check runs CorVer alone); --set reaches the composed config."""
    from factrl.harness.engine.config import compose

    gpu_step = _script()
    args = gpu_step._parser().parse_args(["--set", "train.rollout.static_cache=false", "--set",
                                          "train.rollout.merge_lora=false", "--variants", "corver"])
    cfg = compose(gpu_step.overrides(args, tmp_path / "index", use_vllm=False))
    assert cfg.train.rollout.static_cache is False and cfg.train.rollout.merge_lora is False
    assert args.variants == "corver"
    out = tmp_path / "o.txt"
    assert gpu_step.main(["--shape", "tiny", "--variants", "corver,nope", "--out", str(out)]) == 2
    assert "--variants 'corver,nope': use one or more of corver, response-only" in out.read_text()


def test_several_visible_gpus_stop_gpu_step(tmp_path, monkeypatch):
    from factrl.harness.engine.run import gpus

    for key in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(gpus, "device_files", lambda dev=None: 8)
    out = tmp_path / "o.txt"
    assert _script().main(["--shape", "tiny", "--out", str(out)]) == 2
    assert "8 GPUs are visible to a one-process run" in out.read_text()
