"""`backend=hf`: batched `model.generate` with transformers (the default; runs on CPU).

Accepts an already-loaded model and tokenizer (a training run evaluates the policy it holds
without loading the weights again); otherwise loads them through harness.services.models and applies a
LoRA adapter with PEFT (not merged). Prompts go through harness.core.prompts.format_prompt, so the
chat template and system prompt are the ones training used.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterator, Sequence

from factrl.harness.services.models import ModelIdentity, load_model, load_tokenizer
from factrl.harness.core.prompts import format_prompt

from .base import Backend, Decoding, Generation, GenerationEntry, Request, longest_first

log = logging.getLogger("factrl.evals")


class HFBackend(Backend):
    name = "hf"

    def __init__(self, identity: ModelIdentity, model_cfg: Any, decoding: Decoding, *,
                 adapter: str | Path | None = None, batch_size: int = 16, device: str | None = None,
                 model: Any = None, tokenizer: Any = None, fast: bool | str = False, shared_prefix: bool = False):
        import torch

        self.identity, self.model_cfg, self.decoding = identity, model_cfg, decoding
        self.batch_size = max(1, int(batch_size))
        self.tokenizer = tokenizer if tokenizer is not None else load_tokenizer(identity, model_cfg)
        if model is None:
            device = None if device in (None, "auto") else device
            model = load_model(identity, model_cfg, device=device)
            if adapter:
                from peft import PeftModel

                model = PeftModel.from_pretrained(model, str(adapter), is_trainable=False)
        self.model = model
        self.device = next(model.parameters()).device
        self.dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
        self.adapter = str(adapter) if adapter else None
        self.fast = fast_active(fast, self.device.type)
        self.shared_prefix = bool(shared_prefix)
        self._torch = torch

    def _generate_kwargs(self) -> dict:
        d = self.decoding
        kwargs: dict[str, Any] = {"max_new_tokens": d.max_new_tokens, "do_sample": d.do_sample,
                                  "pad_token_id": self.tokenizer.pad_token_id}
        if d.do_sample:
            kwargs.update(temperature=d.temperature, top_p=d.top_p)
            if d.top_k > 0:
                kwargs["top_k"] = d.top_k
        else:
            # Unset sampling knobs a model's generation_config may carry, so greedy stays greedy
            # without transformers warning about ignored flags.
            kwargs.update(temperature=None, top_p=None, top_k=None)
        if d.repetition_penalty != 1.0:
            kwargs["repetition_penalty"] = d.repetition_penalty
        return kwargs

    def generate(self, requests: Sequence[Request]) -> Iterator[tuple[int, Generation]]:
        torch, tok = self._torch, self.tokenizer
        prompts = [format_prompt(tok, r.question, self.model_cfg, system=r.system) for r in requests]
        # The chat template already carries any BOS, so no special tokens are added. Encoded once:
        # lengths order the batches, and each batch is only padded.
        encoded = tok(prompts, add_special_tokens=False)["input_ids"]
        order = longest_first([len(ids) for ids in encoded])
        kwargs = self._generate_kwargs()
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        saved_side, was_training = tok.padding_side, self.model.training
        tok.padding_side = "left"  # decoder-only: new tokens must follow the prompt directly
        self.model.eval()  # a policy handed over by a training run gets its mode back below
        try:
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                rows = [encoded[i] for i in batch]
                with torch.inference_mode(), self._fast_layers(len(batch)):
                    inputs = self._inputs(rows)
                    if self.decoding.seed is not None:
                        torch.manual_seed(self.decoding.seed + start)  # reproducible sampled batches
                    extra = {}
                    if self.decoding.presence_penalty:
                        extra["logits_processor"] = _presence_penalty(self.decoding.presence_penalty,
                                                                      inputs["input_ids"].shape[1])
                    out = self.model.generate(**inputs, **kwargs, **extra)
                new = out[:, inputs["input_ids"].shape[1]:].tolist()
                for i, ids in zip(batch, new):
                    yield i, self._decode(ids, eos_ids)
        finally:
            tok.padding_side = saved_side
            self.model.train(was_training)

    def _inputs(self, rows: list[list[int]]) -> dict[str, Any]:
        """`generate`'s inputs for one batch: with eval.hf_shared_prefix the rows' common prompt
        prefix (chat template, system prompt, few-shot turn) prefilled once and the padding after it
        (harness/services/models/common_prefix.py: the same positions and visible keys, the same
        greedy tokens up to float rounding); otherwise, or where nothing is shared, left-padded."""
        if self.shared_prefix:
            from factrl.harness.services.models.common_prefix import shared_prefix_inputs

            shared = shared_prefix_inputs(self.model, rows, self.tokenizer.pad_token_id)
            if shared is not None:
                return shared
        return self.tokenizer.pad({"input_ids": rows}, padding=True, return_tensors="pt").to(self.device)

    def _fast_layers(self, rows: int):
        """eval.hf_fast: an adapter merged into a copy of the weights and every linear prepacked for
        oneDNN (harness/services/models/merged_linears.py, sibling projections as one matmul), kept
        for the next batch, and grouped-query attention without key/value copies
        (grouped_attention.py): the same greedy tokens up to float rounding, at about twice the
        decode rate on the CPU."""
        import contextlib

        if not self.fast:
            return contextlib.nullcontext()
        from factrl.harness.services.models.merged_linears import fast_decoding

        return fast_decoding(self.model, rows=rows, keep=True)

    def _decode(self, ids: list[int], eos_ids: set[int]) -> Generation:
        cut = next((k for k, t in enumerate(ids) if t in eos_ids), None)
        if cut is None:
            kept, reason = ids, "length" if len(ids) >= self.decoding.max_new_tokens else "stop"
        else:
            kept, reason = ids[:cut], "stop"
        text = self.tokenizer.decode(kept, skip_special_tokens=True)
        return Generation(text, reason, len(kept) + (0 if cut is None else 1))


def fast_active(setting: bool | str, device_type: str) -> bool:
    """`eval.hf_fast` resolved: auto = on the CPU, where oneDNN prepacking runs."""
    from factrl.harness.services.models.merged_linears import prepack_available

    import torch

    wanted = setting is True or (setting == "auto" and device_type == "cpu")
    return bool(wanted) and prepack_available(torch.device(device_type), torch.float32)


def _presence_penalty(penalty: float, prompt_length: int):
    """vLLM/OpenAI presence penalty for transformers, which has none: subtract `penalty` from the
    logit of every token already generated (prompt tokens excluded), once per token."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    class PresencePenalty(LogitsProcessor):
        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
            generated = input_ids[:, prompt_length:]
            if generated.numel() == 0:
                return scores
            seen = torch.zeros_like(scores, dtype=torch.bool).scatter_(1, generated, True)
            return scores - penalty * seen.to(scores.dtype)

    return LogitsProcessorList([PresencePenalty()])


def build(identity: ModelIdentity, model_cfg: Any, decoding: Decoding, options: dict[str, Any]) -> HFBackend:
    """The registry's `generation` entry `hf` (evals/backends/__init__.py build_backend)."""
    return HFBackend(identity, model_cfg, decoding, adapter=options["adapter"], batch_size=options["batch_size"],
                     device=options["device"], model=options["model"], tokenizer=options["tokenizer"],
                     fast=options["hf_fast"], shared_prefix=options["hf_shared_prefix"])


def provenance(settings: Any, cfg: Any, model_cfg: Any, processes: dict[str, Any]) -> dict[str, Any]:
    """Device, dtype, batch size (the batch changes padding), the fast path and the shared prefix
    when on, processes."""
    import torch

    from factrl.harness.services.models.shapes import torch_dtype

    device = str(cfg.device)  # the composed root key (RootSettings checks it)
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch_dtype(model_cfg.get("dtype") if model_cfg is not None else None)
    # Recorded (and in the cache key) only when on, so descriptors without it keep their keys.
    fast = {"hf_fast": True} if fast_active(settings.hf_fast, device) else {}
    if settings.hf_shared_prefix:
        fast["hf_shared_prefix"] = True
    return {"device": device, "dtype": str(dtype).removeprefix("torch."), "batch_size": settings.batch_size,
            **fast, **processes}


ENTRY = GenerationEntry(build, provenance)  # the registry's `generation` entry `hf`
