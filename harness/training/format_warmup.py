"""A method's supervised format warm-up of the LoRA adapter before the first RL step.

`Method.format_warmup()` (interface 7) returns a `FormatWarmup`; it runs only where the model
config asks for it (`model.format_warmup: true`: the embedded SmolLM2-135M, which follows no
format beyond the answer block from the instruction alone) and its `steps` are > 0. It stands in
for the SFT stage of the papers' SFT+RL variants (RLCR's SFT+RLCR) and is recorded as a stand-in.

1. Targets: the policy's own greedy completion (the method's prompt, `train.max_completion_length`
   new tokens) to training questions of the pool, in pool order, handed to the method's
   `target(turn, question=, rng=)`; the gold is never passed. A target longer than
   `train.max_completion_length` tokens (end token included) is skipped, as RL would clip it.
2. Training: AdamW (no decay) on the adapter's trainable weights, plain cross-entropy on the
   target's tokens (end token included, so the model learns to stop) with the prompt masked, in a
   seeded order of the targets; torch's RNG is forked and seeded, so the RL steps after it draw
   the same numbers whether the warm-up ran or was loaded.
3. Record: train/warmup.jsonl (loss per step), train/warmup/adapter.safetensors (the warmed-up
   trainable weights) and then train/warmup.json (the component entry). The warm-up is part of
   step 0: a resumed run that finds warmup.json loads the weights instead of training again; one
   killed before it was written reruns the warm-up from the start, which gives the same weights
   (greedy targets, seeded order and RNG; tests/core/test_format_warmup.py).
"""
from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from ..core.method import FormatWarmup, Method
from ..core.prompts import format_prompt, response_prefix
from ..core.rundir import read_json, write_json
from ..services.models.settings import ModelSettings

log = logging.getLogger(__name__)

FILENAME = "warmup.json"
LOG_FILENAME = "warmup.jsonl"
WEIGHTS = "warmup/adapter.safetensors"
COMPONENT = "format_warmup"
_GENERATE_BATCH = 8


def planned(method: Method, model_cfg: Any) -> FormatWarmup | None:
    """The method's warm-up when this run trains it: the method offers one with steps > 0 and the
    model config sets `format_warmup`; else None."""
    plan = method.format_warmup()
    if plan is None or int(plan.steps) <= 0:
        return None
    return plan if ModelSettings.of(model_cfg).format_warmup else None


def run_or_load(plan: FormatWarmup, model: Any, tokenizer: Any, rows: list[dict], *, model_cfg: Any,
                system: str | None, seed: int, max_completion_length: int, out: Path, write: bool = True
                ) -> dict[str, Any]:
    """Warm the adapter of `model` (a PEFT model) up, or load the weights of an earlier attempt;
    returns the `format_warmup` component entry. `write`: this process writes the files (rank 0)."""
    out = Path(out)
    if (out / FILENAME).is_file() and (out / WEIGHTS).is_file():
        entry = read_json(out / FILENAME)["component"]
        _load_trainable(model, out / WEIGHTS)
        log.info("format warm-up: loaded from %s (an earlier attempt)", out / WEIGHTS)
        return entry
    started = time.perf_counter()
    prefix = response_prefix(model_cfg)
    examples, tried, too_long = collect_targets(plan, model, tokenizer, rows, model_cfg=model_cfg, system=system,
                                                seed=seed, max_completion_length=max_completion_length)
    if not examples:
        raise ConfigError(f"format warm-up: none of the policy's greedy completions to {tried} pool question(s) gave "
                          f"a target ({too_long} too long); set method.format_warmup.steps=0 or model.format_warmup="
                          f"false to train without it")
    data = [encode(tokenizer, prompt, target[len(prefix):]) for prompt, target in examples]
    losses, before, after = train_steps(model, tokenizer, data, plan, seed=seed)
    seconds = time.perf_counter() - started
    entry = {"kind": COMPONENT, "backend": "harness", "model": None, "revision": None, "stand_in": True,
             "label": plan.label, "note": plan.note, "steps": int(plan.steps), "examples": len(examples),
             "examples_asked": int(plan.examples), "questions_tried": tried, "too_long": too_long,
             "batch_size": int(plan.batch_size), "learning_rate": float(plan.learning_rate),
             "loss_before": round(before, 6), "loss_after": round(after, 6), "seconds": round(seconds, 2),
             "targets_sha256": hashlib.sha256(json.dumps([t for _, t in examples]).encode()).hexdigest(),
             **plan.facts}
    log.info("format warm-up: %d steps on %d targets, loss %.3f -> %.3f, %.1f s", plan.steps, len(examples), before,
             after, seconds)
    if write:
        (out / LOG_FILENAME).write_text("".join(json.dumps({"step": i + 1, "loss": round(x, 6)}) + "\n"
                                                for i, x in enumerate(losses)))
        _save_trainable(model, out / WEIGHTS)
        write_json(out / FILENAME, {"component": entry, "targets": [t for _, t in examples]})  # last: marks it done
    return entry


def collect_targets(plan: FormatWarmup, model: Any, tokenizer: Any, rows: list[dict], *, model_cfg: Any,
                    system: str | None, seed: int, max_completion_length: int
                    ) -> tuple[list[tuple[str, str]], int, int]:
    """(prompt text, target turn) pairs for up to `plan.examples` pool questions in pool order
    (at most 4x as many tried), the number of questions tried and of targets too long."""
    prefix = response_prefix(model_cfg)
    rng = random.Random(seed)
    examples: list[tuple[str, str]] = []
    tried = too_long = 0
    candidates = rows[: 4 * int(plan.examples)]
    for start in range(0, len(candidates), _GENERATE_BATCH):
        if len(examples) >= int(plan.examples):
            break
        batch = candidates[start:start + _GENERATE_BATCH]
        prompts = [format_prompt(tokenizer, row["question"], model_cfg, system=system) for row in batch]
        for row, prompt, completion in zip(batch, prompts, greedy(model, tokenizer, prompts, max_completion_length)):
            if len(examples) >= int(plan.examples):
                break
            tried += 1
            target = plan.target(prefix + completion, question=row["question"], rng=rng)
            if target is None:
                continue
            if not target.startswith(prefix):
                raise TypeError(f"format warm-up target must start with the response prefix {prefix!r}: {target[:60]!r}")
            if len(tokenizer(target[len(prefix):], add_special_tokens=False)["input_ids"]) + 1 > max_completion_length:
                too_long += 1
                continue
            examples.append((prompt, target))
    return examples, tried, too_long


def greedy(model: Any, tokenizer: Any, prompts: list[str], max_new_tokens: int) -> list[str]:
    """The model's greedy completions (special tokens dropped, as the rollouts decode them). On the
    CPU through the rollouts' fast path (the adapter merged, weights prepacked, grouped-query SDPA:
    harness/training/README.md, "Speed on the CPU"): the same tokens up to float rounding."""
    import contextlib

    import torch

    from ..services.models.merged_linears import fast_decoding, prepack_available

    side, tokenizer.padding_side = tokenizer.padding_side, "left"
    was_training = model.training
    model.eval()
    try:
        batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(_device(model))
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        weight = next(model.parameters())
        with torch.no_grad(), contextlib.ExitStack() as fast:
            if prepack_available(weight.device, weight.dtype):
                fast.enter_context(fast_decoding(model, rows=len(prompts)))
            ids = model.generate(**batch, max_new_tokens=int(max_new_tokens), do_sample=False, pad_token_id=pad,
                                 use_cache=True)
    finally:
        tokenizer.padding_side = side
        model.train(was_training)
    return tokenizer.batch_decode(ids[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)


def encode(tokenizer: Any, prompt: str, completion: str) -> tuple[list[int], list[int]]:
    """(input ids, labels) of prompt + completion + end token; labels -100 on the prompt."""
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    target_ids = tokenizer(completion, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return prompt_ids + target_ids, [-100] * len(prompt_ids) + target_ids


def train_steps(model: Any, tokenizer: Any, data: list[tuple[list[int], list[int]]], plan: FormatWarmup, *,
                seed: int) -> tuple[list[float], float, float]:
    """`plan.steps` AdamW steps; returns the per-step losses and the mean target-token loss over
    all targets before and after."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        before = mean_loss(model, tokenizer, data)
        optimizer = torch.optim.AdamW(params, lr=float(plan.learning_rate), weight_decay=0.0)
        order_rng, order, losses = random.Random(seed), [], []
        was_training = model.training
        model.train()
        for _ in range(int(plan.steps)):
            picked = []
            while len(picked) < min(int(plan.batch_size), len(data)):
                if not order:
                    order = list(range(len(data)))
                    order_rng.shuffle(order)
                picked.append(order.pop())
            loss = batch_loss(model, tokenizer, [data[i] for i in picked])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
        optimizer.zero_grad(set_to_none=True)
        model.train(was_training)
        after = mean_loss(model, tokenizer, data)
    return losses, before, after


def batch_loss(model: Any, tokenizer: Any, items: list[tuple[list[int], list[int]]], reduction: str = "mean") -> Any:
    """Cross-entropy of the labelled tokens of `items` (right-padded), mean over those tokens."""
    import torch

    width = max(len(ids) for ids, _ in items)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    ids = torch.tensor([x + [pad] * (width - len(x)) for x, _ in items])
    labels = torch.tensor([y + [-100] * (width - len(y)) for _, y in items])
    attention = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x, _ in items])
    device = _device(model)
    logits = model(input_ids=ids.to(device), attention_mask=attention.to(device)).logits[:, :-1].float()
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1).to(device),
                                             ignore_index=-100, reduction=reduction)


def mean_loss(model: Any, tokenizer: Any, data: list[tuple[list[int], list[int]]]) -> float:
    """The mean cross-entropy per target token over `data`, without dropout or gradients."""
    import torch

    was_training = model.training
    model.eval()
    total = tokens = 0.0
    with torch.no_grad():
        for start in range(0, len(data), _GENERATE_BATCH):
            items = data[start:start + _GENERATE_BATCH]
            total += float(batch_loss(model, tokenizer, items, reduction="sum"))
            tokens += sum(sum(1 for y in labels[1:] if y != -100) for _, labels in items)
    model.train(was_training)
    return total / max(tokens, 1.0)


def _device(model: Any) -> Any:
    return next(model.parameters()).device


def _save_trainable(model: Any, path: Path) -> None:
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({n: p.detach().cpu().contiguous() for n, p in model.named_parameters() if p.requires_grad}, str(path))


def _load_trainable(model: Any, path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    saved = load_file(str(path))
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    if set(saved) != set(params):
        raise ConfigError(f"{path} holds other adapter weights than this run trains ({len(saved)} vs {len(params)} "
                          f"tensors); remove {path.parent} and {path.parent.parent / FILENAME} to warm up again")
    with torch.no_grad():
        for name, param in params.items():
            param.copy_(saved[name].to(param.device, param.dtype))
