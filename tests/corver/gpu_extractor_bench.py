"""GPU check and timing of the LLM extractor path (the `quco` backend), run by hand on a GPU.

    python tests/corver/gpu_extractor_bench.py --out results/   # add --smoke for a CPU dry run

1. A tiny Qwen2 saved to disk goes through build_extractor(backend=quco, device=cuda,
   dtype=bfloat16): generation runs, outputs parse, the global CPU and CUDA RNG states are
   untouched, and the same seed gives the same triples.
2. A randomly initialised Qwen2 with Qwen2.5-0.5B's shape (the QuCo extractor's base), bf16
   on CUDA, times one step's extraction (all sentences of Q=3 x C=16 completions). Random
   weights never emit EOS, so every sequence runs to max_new_tokens: an upper bound for HF
   generate; the real checkpoint stops after its short list.
Not collected by pytest (no test_ prefix): it needs a GPU and minutes.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiny_qwen import build_tiny_qwen, qwen_tokenizer_fast  # noqa: E402

QWEN25_05B = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                  num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, rope_theta=1e6,
                  tie_word_embeddings=True)


def sentences(n: int) -> list[str]:
    facts = ["Paris is the capital of France.", "Marie Curie studied physics in Warsaw and Paris.",
             "The Eiffel Tower was completed in 1889 for the World's Fair.", "Einstein was born in Ulm, Germany."]
    return [f"{facts[i % 4][:-1]}, as note {i} says." for i in range(n)]


def check_tiny(device: str, dtype: str) -> dict:
    import torch

    from factrl.methods.corver.extractor import build_extractor

    directory = build_tiny_qwen(Path(tempfile.mkdtemp()) / "tiny-qwen2")
    cfg = {"backend": "quco", "model": str(directory), "dtype": dtype, "device": device, "max_new_tokens": 16,
           "batch_size": 4}
    ext = build_extractor(cfg)
    cpu_state = torch.get_rng_state()
    cuda_state = torch.cuda.get_rng_state() if torch.cuda.is_available() else None
    first = ext.extract(sentences(10))
    untouched = bool(torch.equal(cpu_state, torch.get_rng_state()))
    if cuda_state is not None:
        untouched = untouched and bool(torch.equal(cuda_state, torch.cuda.get_rng_state()))
    again = build_extractor(cfg).extract(sentences(10))
    return {"device": str(next(ext.model.parameters()).device), "dtype": str(next(ext.model.parameters()).dtype),
            "rows": len(first), "rng_untouched": untouched, "reproducible": first == again,
            "stats": ext.last_stats}


def bench(device: str, n_sentences: int, batch_size: int, max_new_tokens: int, shape: dict) -> dict:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from factrl.methods.corver.extractor import LLMExtractor

    tok = qwen_tokenizer_fast()
    config = Qwen2Config(**shape, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16 if device == "cuda" else torch.float32)
    with torch.device(device):
        model = Qwen2ForCausalLM(config).eval()
    torch.set_default_dtype(previous)
    ext = LLMExtractor(model, tok, max_new_tokens=max_new_tokens, batch_size=batch_size, cache=False,
                       cache_size=0)
    ext.extract(sentences(min(8, n_sentences)))  # warm-up: kernels, allocator
    if device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    ext.extract(sentences(n_sentences))
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    prompt_tokens = len(ext.prompt_ids(sentences(1)[0]))
    return {"sentences": n_sentences, "batch_size": batch_size, "max_new_tokens": max_new_tokens,
            "prompt_tokens": prompt_tokens, "seconds": round(seconds, 3),
            "ms_per_sentence": round(1000 * seconds / n_sentences, 2),
            "generated_tokens": ext.last_stats.get("generated_tokens"),
            "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if device == "cuda" else None}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes on CPU, to test the script")
    args = parser.parse_args()
    import torch

    device = "cuda" if torch.cuda.is_available() and not args.smoke else "cpu"
    results = {"torch": torch.__version__, "device_name": torch.cuda.get_device_name() if device == "cuda" else "cpu"}
    results["tiny"] = check_tiny(device, "bfloat16" if device == "cuda" else "float32")
    print(json.dumps(results, indent=1), flush=True)
    if args.smoke:
        shape = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                     num_key_value_heads=1, vocab_size=2000, tie_word_embeddings=True)
        plan = [(6, 4, 4)]
    else:
        shape = QWEN25_05B
        # 48 completions x ~8 sentences = 384 sentences per step (Q=3, C=16).
        plan = [(384, 64, 48), (384, 128, 48), (384, 384, 48), (128, 64, 256), (384, 128, 256)]
    results["bench"] = []
    for n, bs, new in plan:
        results["bench"].append(bench(device, n, bs, new, shape))
        print(json.dumps(results["bench"][-1]), flush=True)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "gpu_extractor_bench.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
