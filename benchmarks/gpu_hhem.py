"""FSPO's HHEM scorer on CUDA in bf16: pairs/s, scores against fp32, peak memory beside a plan.

    python benchmarks/gpu_hhem.py [--shape base|tiny] [--pairs 480] [--premise-words 400] [--device auto]

FSPO scores each reasoning step against the question's evidence with HHEM-2.1-Open
(configs/method/fspo.yaml: `nli.dtype: auto` = bf16 weights on CUDA, `nli.autocast: bfloat16`,
batch 16, premises cut at 2,048 tokens). No HHEM weights are reachable offline, so this builds an
HHEM-shaped checkpoint with random weights (tests/nli/tiny_models.py) in flan-t5-base's shape
(`--shape base`: d_model 768, d_ff 2,048 gated-GELU, 12 heads, vocabulary 32,128; HHEM keeps the
T5 encoder's 12 layers and a classifier: 110M parameters) and loads it twice through the
harness's own loader (`load_nli`, the path FSPO uses): FSPO's precision (bf16 weights + bf16 autocast on CUDA) and float32. Both score the same pairs
(premises of `--premise-words` words, one hypothesis sentence each); the report gives the
seconds and pairs/s of the bf16 scorer, the mean and largest |bf16 - fp32| score difference
(HHEM's score is a softmax probability; the random checkpoint's classifier is scaled x 20 to spread
its scores, which also magnifies bf16's rounding, so single pairs near 0.5 can move by more than a
trained HHEM's would), and the device's peak memory beside
a plan: CUDA context 1 GB + both copies of the weights (2 + 4 bytes per parameter) + the largest
transient of a batch (fp32 attention scores, batch x heads x T^2 x 4, in one layer at a time).

`--shape tiny` (d_model 16, one layer) runs the same code on the CPU in seconds: the GPU check's
dry run and the test (tests/shapes/test_gpu_hhem.py). Exit 0 when every score is finite and in
[0, 1] and the mean difference is within `--tolerance` (default 0.05; the CPU has no bf16
autocast, so there the bf16 copy runs bf16 weights in bf16 and the same tolerance applies).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests/nli/tiny_models.py builds the HHEM-shaped checkpoint
GB = 10**9
# google/flan-t5-base's config.json (the foundation HHEM-2.1-Open names), the fields that fix shapes.
BASE = {"vocab_size": 32128, "d_model": 768, "d_kv": 64, "d_ff": 2048, "num_layers": 12, "num_decoder_layers": 12,
        "num_heads": 12, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False}


def build(root: Path, shape: str) -> tuple[Path, Path]:
    """An HHEM-shaped checkpoint with random weights and its foundation directory."""
    from tests.nli.tiny_models import build_hhem, build_t5_foundation

    foundation = build_t5_foundation(root / "foundation")
    if shape == "base":
        import json

        path = foundation / "config.json"
        config = json.loads(path.read_text())
        config.update(BASE)
        path.write_text(json.dumps(config, indent=2))
    return build_hhem(root / "hhem", foundation), foundation


def pairs(count: int, words: int) -> list[tuple[str, str]]:
    from tests.nli.tiny_models import WORDS

    vocab = [w for w in WORDS if w.isalpha()]
    out = []
    for i in range(count):
        premise = " ".join(vocab[(i * 7 + j * 3) % len(vocab)] for j in range(words)) + "."
        hypothesis = " ".join(vocab[(i + j * 5) % len(vocab)] for j in range(12)) + "."
        out.append((premise, hypothesis))
    return out


def _peak() -> tuple[int, int]:
    """(reserved or peak RSS, device total - free) in bytes."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        return max(int(torch.cuda.max_memory_reserved()), 0), int(total - free)
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024, 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=("base", "tiny"), default="base")
    parser.add_argument("--pairs", type=int, default=480, help="pairs scored (FSPO: steps of 48 completions)")
    parser.add_argument("--premise-words", type=int, default=400)
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda")
    parser.add_argument("--tolerance", type=float, default=0.05, help="largest mean |bf16 - fp32| score allowed")
    args = parser.parse_args(argv)

    import torch

    from factrl.harness.services.nli import load_nli

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    if args.shape == "base" and device != "cuda":
        print("gpu_hhem: --shape base is the GPU check (110M parameters); use --shape tiny on a CPU")
        return 2
    data = pairs(args.pairs, args.premise_words)
    with tempfile.TemporaryDirectory(prefix="gpu-hhem-") as tmp:
        hhem, foundation = build(Path(tmp), args.shape)
        common = {"backend": "hhem", "model": str(hhem), "foundation": str(foundation), "device": device,
                  "batch_size": 16}
        fspo = load_nli({**common, "dtype": "bfloat16", "autocast": "bfloat16"})  # FSPO's precision on CUDA
        reference = load_nli({**common, "dtype": "float32", "autocast": "none"})
        parameters = sum(p.numel() for p in reference.model.parameters())
        fspo.score(data[:16])  # warm-up: kernels, allocator
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        fast = fspo.score(data)
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        exact = reference.score(data)
        reserved, device_peak = _peak()
        precision = fspo.describe()
    tokens = len(fspo.tokenizer(fspo.prompt.format(text1=data[0][0], text2=data[0][1]))["input_ids"])
    heads = int(reference.model.t5.config.num_heads)
    transient = 16 * heads * tokens ** 2 * 4
    plan = GB + parameters * (2 + 4) + transient
    gaps = [abs(a - b) for a, b in zip(fast, exact)]
    diff, mean = max(gaps), sum(gaps) / len(gaps)
    finite = all(x == x and 0.0 <= x <= 1.0 for x in fast + exact)
    print(f"gpu_hhem: shape={args.shape} device={device} {parameters / 1e6:.1f}M parameters; {len(data)} pairs of "
          f"~{tokens} tokens; precision {precision['dtype']} weights, autocast {precision['autocast']}")
    print(f"NOTE: HHEM bf16 on {device}: {len(data)} pairs in {seconds:.2f} s = {len(data) / seconds:.0f} pairs/s; "
          f"|bf16 - fp32| score: mean {mean:.4f} (tolerance {args.tolerance}), max {diff:.4f}; scores finite: {finite}")
    peak = max(reserved, device_peak)
    print(f"planned peak {plan / GB:.1f} GB (context 1 GB + bf16 and fp32 weights {parameters * 6 / GB:.2f} GB + "
          f"batch transient {transient / GB:.2f} GB) vs measured {peak / GB:.2f} GB "
          + ("(device: total - free)" if device == "cuda" else "(CPU: peak RSS of the process)"))
    return 0 if finite and mean <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
