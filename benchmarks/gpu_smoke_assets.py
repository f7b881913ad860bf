"""Assets of benchmarks/gpu_smoke.sh (step 2): a small random Llama on disk, the fixture index, a pool.

    python benchmarks/gpu_smoke_assets.py OUT_DIR      # prints one JSON line with the paths

- OUT_DIR/model: a 4-layer Llama with head_dim 64 (the smallest head size vLLM's attention
  kernels take; tiny-llama's 4 does not), hidden 256, a 32,000-token vocabulary, bf16 on CUDA
  (float32 on a CPU), random weights (seed 0), saved with the tiny-llama (Llama-2) tokenizer and
  its chat template, so `model=tiny-llama model.path=OUT_DIR/model` runs it everywhere a model
  folder is accepted, vLLM included;
- OUT_DIR/index: the CorVer tests' infini-gram index (tests/corver/fact_index.py), tiny-llama tokens;
- OUT_DIR/pool.json: 4 questions in the pool file format (pool=file pool.path=...).
Needs no network: tiny-llama is an embedded model.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
POOL = [
    {"question": "What is the capital of France?", "answers": ["Paris"], "title": "Paris"},
    {"question": "In which city was Albert Einstein born?", "answers": ["Ulm"], "title": "Albert Einstein"},
    {"question": "In which city did Marie Curie study?", "answers": ["Warsaw"], "title": "Marie Curie"},
    {"question": "Who wrote The Magic Flute?", "answers": ["Mozart", "Wolfgang Amadeus Mozart"], "title": "Mozart"},
]


def small_llama(model_dir: Path):
    """The random head_dim-64 Llama with the tiny-llama tokenizer, saved in `model_dir`; returns
    (model, tokenizer). Also the vLLM backend's GPU test model (tests/evals/test_eval_configs.py)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from factrl.harness.services import models
    from factrl.harness.engine.config import compose

    tok_cfg = compose(["model=tiny-llama"]).model
    tokenizer = models.load_tokenizer(models.resolve(tok_cfg), tok_cfg)
    cuda = torch.cuda.is_available()
    config = LlamaConfig(vocab_size=32000, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=2048,
                         tie_word_embeddings=False, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    dtype = torch.bfloat16 if cuda else torch.float32
    with torch.device("cuda" if cuda else "cpu"):
        model = LlamaForCausalLM(config).to(dtype)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    return model, tokenizer


def build(out: Path) -> dict:
    sys.path.insert(0, str(REPO))
    from tests.corver.fact_index import build_fact_index

    out.mkdir(parents=True, exist_ok=True)
    model_dir = out / "model"
    model, tokenizer = small_llama(model_dir)
    dtype = next(model.parameters()).dtype
    (out / "corpus").mkdir(exist_ok=True)
    index = build_fact_index(out / "corpus", tokenizer)
    pool = out / "pool.json"
    pool.write_text(json.dumps(POOL, indent=1), encoding="utf-8")
    return {"model": str(model_dir), "index": str(index), "pool": str(pool), "dtype": str(dtype).split(".")[-1],
            "parameters": sum(p.numel() for p in model.parameters())}


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", type=Path, help="folder to write model/, corpus/ and pool.json into")
    args = parser.parse_args(argv)
    print("NOTE:", json.dumps(build(args.out_dir.resolve())))


if __name__ == "__main__":
    main()
