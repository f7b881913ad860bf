"""The demo evaluation's generation on the CPU: the shared prompt prefix against left-padded batches,
in one process, in one run.

    python benchmarks/bench_eval_prefix.py [--model smollm2-135m] [--questions 100] [--rounds 2]
        [--variants plain16,shared16,shared50] [--threads N] [--adapter DIR] [--out FILE]

Variants (the hf backend of `harness eval`, the same loaded model, the demo set's first questions,
greedy, <= 64 new tokens, eval.hf_fast as configured by default):
  plainB   eval.hf_shared_prefix=false, eval.batch_size=B: every prompt left-padded and prefilled
           whole (the path before the shared prefix; B=16 was the demo's batch)
  sharedB  eval.hf_shared_prefix=true, eval.batch_size=B: the batch's common prefix prefilled once
Each round runs every variant once, alternating; the report gives each variant's median seconds,
its ratio to the first variant, and whether every variant decoded the first variant's tokens.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _variant(name: str) -> tuple[bool, int]:
    for kind in ("plain", "shared"):
        if name.startswith(kind) and name[len(kind):].isdigit():
            return kind == "shared", int(name[len(kind):])
    raise SystemExit(f"--variants: {name!r} is not plainB or sharedB (B a batch size, e.g. shared50)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", default="plain16,shared16,shared50")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--adapter", default=None, help="a LoRA adapter directory (e.g. a demo cell's train/adapter)")
    parser.add_argument("--out", default=None, help="write the report as JSON here")
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    settings = {v: _variant(v) for v in variants}

    import torch

    torch.set_num_threads(args.threads)
    from factrl.evals.backends import Decoding, Request, build_backend
    from factrl.evals.sets import load_set
    from factrl.harness.core.prompts import system_prompt
    from factrl.harness.engine.config import compose
    from factrl.harness.services.models import load_model, resolve

    cfg = compose([f"model={args.model}", "eval=demo"])
    identity = resolve(cfg.model)
    model = load_model(identity, cfg.model, device="cpu")
    if args.adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, args.adapter, is_trainable=False)
    records = load_set("demo", limit=args.questions).records
    requests = [Request(r.question, system_prompt(False)) for r in records]
    decoding = Decoding.from_mapping(max_new_tokens=int(cfg.eval.max_new_tokens), do_sample=False)
    times: dict[str, list[float]] = {v: [] for v in variants}
    texts: dict[str, list[str]] = {}
    for round_ in range(args.rounds):
        for name in variants:
            shared, batch = settings[name]
            backend = build_backend("hf", identity, cfg.model, decoding, batch_size=batch, model=model, tokenizer=None,
                                    hf_fast=cfg.eval.hf_fast, hf_shared_prefix=shared)
            start = time.perf_counter()
            out = [g.text for _, g in sorted(backend.generate(requests))]
            times[name].append(time.perf_counter() - start)
            texts.setdefault(name, out)
            print(f"round {round_ + 1} {name:<10} {times[name][-1]:6.1f} s", flush=True)
    first = variants[0]
    base = statistics.median(times[first])
    report = {"model": args.model, "questions": len(requests), "threads": args.threads, "adapter": args.adapter,
              "variants": {v: {"seconds": statistics.median(times[v]), "rounds": times[v],
                               "x_vs_first": base / statistics.median(times[v]),
                               "same_texts_as_first": sum(a == b for a, b in zip(texts[v], texts[first]))}
                           for v in variants}}
    print(f"\n{len(requests)} demo questions, {args.threads} threads, median of {args.rounds} rounds:")
    for v, row in report["variants"].items():
        print(f"  {v:<10} {row['seconds']:6.1f} s  x{row['x_vs_first']:.2f} vs {first}  "
              f"same texts as {first}: {row['same_texts_as_first']}/{len(requests)}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return 0 if all(r["same_texts_as_first"] == len(requests) for r in report["variants"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
