"""NOVER's per-step reward time next to CorVer's on the same batches, and against one policy forward.

    python benchmarks/bench_nover.py [--model smollm2-135m] [--questions 3] [--completions 16] [--steps 3]

The batches are bench_rewards.py's synthetic ones (demo pool rows with evidence articles:
factual reasoning, a false sentence, right and wrong answers, format failures), so CorVer's
column here is the one there. NOVER (the factrl-nover plugin) scores them with the real model
(`--model`, a LoRA of the protocol's shape with random B weights, and its frozen proxy copy)
through the harness's PolicyHandle: one teacher-forced pass over every well-formed completion
of the step. A model whose prompt ends with a response prefix ("<think>" for SmolLM2) gets the
completions without it, as the policy would have written them.

Printed: mean and median seconds per step for both, the ratio NOVER / CorVer, and NOVER's ratio
to one bare policy forward over the same tokens (the same padded batch and kept logits,
without tokenisation, parsing or ranking). The target: NOVER's reward time <= 1.2 x
that forward, i.e. it adds one forward pass over the batch and little else.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

TARGET = 1.2


def _policy(bench, cfg):
    """A PolicyHandle over the model with a LoRA whose B weights are random, and NOVER's proxy copy."""
    import torch
    from peft import get_peft_model

    from factrl.harness.services import models
    from factrl.harness.training.args import lora_config
    from factrl.harness.training.policy import PolicyHandle

    torch.manual_seed(0)
    model = get_peft_model(models.load_model(models.resolve(cfg.model), cfg.model), lora_config(cfg.lora))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.01)

    class Recording(PolicyHandle):
        """Keeps the last batch it scored, so the bare forward can run on the same tokens."""

        last = None

        def target_logprobs(self, contexts, targets, **kwargs):
            self.last = (contexts, targets, kwargs.get("adapter"))
            return super().target_logprobs(contexts, targets, **kwargs)

    return Recording(model, bench.tokenizer)


def bare_forward(policy, contexts, targets, adapter) -> float:
    """Seconds of one no-grad forward of the same left-padded batch, keeping the same logits."""
    import torch

    lengths = [len(c) + len(t) for c, t in zip(contexts, targets)]
    width, keep = max(lengths), max(len(t) for t in targets) + 1
    ids = torch.zeros((len(lengths), width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for b, (c, t) in enumerate(zip(contexts, targets)):
        ids[b, width - lengths[b]:] = torch.tensor(list(c) + list(t))
        mask[b, width - lengths[b]:] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with policy.using(adapter), torch.no_grad():
        started = time.perf_counter()
        policy.model(input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=keep, use_cache=False)
        return time.perf_counter() - started


def main() -> None:
    import torch

    from bench_rewards import Bench, build_corver, synthetic_batches

    from factrl.harness.services import models
    from factrl.harness.services.evidence import open_evidence
    from factrl.harness.pool import load_pool
    from factrl.harness.core.prompts import response_prefix

    try:
        import factrl_nover
    except ImportError:
        sys.exit("bench_nover: the factrl-nover plugin is not installed (pip install -e plugins/nover; make setup does)")

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m", help="the policy (NOVER) and tokenizer (both)")
    parser.add_argument("--questions", type=int, default=3, help="Q (docs/PROTOCOL.md §4: 3)")
    parser.add_argument("--completions", type=int, default=16, help="G (docs/PROTOCOL.md §4: 16)")
    parser.add_argument("--steps", type=int, default=3, help="measured batches (after one warm-up batch)")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

    with tempfile.TemporaryDirectory() as tmp:
        from factrl.harness.engine.config import compose

        cfg = compose([f"model={args.model}", "method=nover", f"train.completions_per_question={args.completions}"])
        identity = models.resolve(cfg.model)
        tokenizer = models.load_tokenizer(identity, cfg.model)
        bench = Bench(args.model, tokenizer, Path(tmp), args)
        with open_evidence(cfg.evidence) as store:
            rows = [r for r in load_pool(cfg.pool) if r.get("title") and store.by_title(r["title"], k=1)]
            batches = synthetic_batches(rows, store, args.questions, args.completions, args.steps + 1)
        prefix = response_prefix(cfg.model)
        corver = build_corver(bench)
        policy = _policy(bench, cfg)
        method = factrl_nover.NoverMethod(cfg.method)
        method.setup_policy(policy)
        nover = factrl_nover.NoverReward(tokenizer=tokenizer, model_cfg=cfg.model, group_size=args.completions,
                                         settings=factrl_nover.NoverSettings.from_mapping(dict(cfg.method)))
        times = {"corver": [], "nover": [], "forward": [], "inside": []}
        scored = []
        for batch in batches:
            texts = [t for _, t, _ in batch]
            ids = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for t in texts]
            common = dict(prompts=[p for p, _, _ in batch], rows=[r for _, _, r in batch])
            started = time.perf_counter()
            corver(completions=texts, completion_ids=ids, **common)
            times["corver"].append(time.perf_counter() - started)
            own = [t[len(prefix):] if prefix and t.startswith(prefix) else t for t in texts]
            own_ids = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id] for t in own]
            started = time.perf_counter()
            out = nover(completions=own, completion_ids=own_ids, policy=policy, **common)
            times["nover"].append(time.perf_counter() - started)
            times["inside"].append(out.diagnostics["forward_seconds"])
            contexts, targets, adapter = policy.last
            times["forward"].append(bare_forward(policy, contexts, targets, adapter))
            scored.append((len(contexts), sum(len(c) + len(t) for c, t in zip(contexts, targets))))
    mean = {k: statistics.mean(v[1:]) for k, v in times.items()}
    med = {k: statistics.median(v[1:]) for k, v in times.items()}
    seqs, tokens = scored[-1]
    print(f"model {args.model}, {args.questions} questions x {args.completions} completions per step, "
          f"{args.steps} measured steps (+1 warm-up), OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
    print(f"{'column':<24} {'mean s/step':>12} {'median':>10} {'x corver':>10}")
    print(f"{'corver':<24} {mean['corver']:12.4f} {med['corver']:10.4f} {1.0:10.2f}  heuristic extractor, demo index")
    print(f"{'nover':<24} {mean['nover']:12.4f} {med['nover']:10.4f} {mean['nover'] / mean['corver']:10.2f}  "
          f"proxy adapter, {seqs} well-formed sequences, {tokens} tokens in one pass")
    print(f"{'one policy forward':<24} {mean['forward']:12.4f} {med['forward']:10.4f} "
          f"{mean['forward'] / mean['corver']:10.2f}  same padded batch and kept logits")
    print(f"{'  of which its forward':<24} {mean['inside']:12.4f} {med['inside']:10.4f} "
          f"{mean['inside'] / mean['corver']:10.2f}  PolicyHandle.target_logprobs inside the reward")
    ratio = mean["nover"] / mean["forward"]
    print(f"nover reward / one policy forward over the same tokens: {ratio:.2f} (target <= {TARGET}) "
          f"{'ok' if ratio <= TARGET else 'OVER TARGET'}; format rate {out.diagnostics['format_rate']:.2f}")


if __name__ == "__main__":
    main()
