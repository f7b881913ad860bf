"""`backend=vllm`: vLLM's offline engine, with a LoRA adapter applied per request (not merged).

GPU only; vLLM is imported when this backend is built, never at package import. Written
against vLLM 0.31's offline API: `LLM(model=..., enable_lora=True, max_lora_rank=...)`,
`SamplingParams(...)`, `LLM.generate(prompts, sampling_params, lora_request=LoRARequest(name,
int_id, path))`. Prompts are passed as token ids (`{"prompt_token_ids": [...]}`) built with the
same chat template and `add_special_tokens=False` as the hf backend, so templates that already
carry a BOS do not get a second one.

Requests are submitted in chunks (`chunk_size`) so finished samples reach the JSONL file
during a long run; vLLM schedules within a chunk itself.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Iterator, Sequence

from factrl.harness.core.errors import HarnessError
from factrl.harness.services.models.shapes import torch_dtype
from factrl.harness.services.models import ModelIdentity, load_tokenizer
from factrl.harness.core.prompts import format_prompt

from .base import Backend, Decoding, Generation, GenerationEntry, Request
from .settings import VLLMEvalSettings

log = logging.getLogger("factrl.evals")

# vLLM accepts only these LoRA ranks for max_lora_rank; the adapter's rank is rounded up.
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def gpu_share(requested: float, free: int, total: int) -> float:
    """The engine's gpu_memory_utilization: the configured share (eval.vllm), lowered to what is
    free when another process holds part of the GPU (vLLM refuses to start when the share exceeds
    the free memory: e.g. a training run's leftovers, or a second engine). Lowering it only shrinks
    the KV cache; below 10% of the GPU the evaluation stops with the reason."""
    requested = float(requested)
    available = free / total - 0.02  # a margin for the engine's own CUDA context
    if requested <= available:
        return requested
    if available < 0.1:
        raise HarnessError(f"backend=vllm: only {free / 2**30:.1f} of {total / 2**30:.1f} GiB of the GPU are free; "
                           f"another process holds the rest (nvidia-smi shows which).")
    log.warning("backend=vllm: %.1f of %.1f GiB free, so eval.vllm.gpu_memory_utilization %.2f is lowered to %.2f",
                free / 2**30, total / 2**30, requested, available)
    return round(available, 3)


def adapter_rank(adapter: Path) -> int:
    config = Path(adapter) / "adapter_config.json"
    try:
        rank = int(json.loads(config.read_text(encoding="utf-8"))["r"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise HarnessError(f"adapter {adapter}: cannot read the LoRA rank from {config.name} ({err}).") from None
    return next((r for r in LORA_RANKS if r >= rank), rank)


class VLLMBackend(Backend):
    name = "vllm"

    def __init__(self, identity: ModelIdentity, model_cfg: Any, decoding: Decoding, *,
                 adapter: str | Path | None = None, settings: Any = None):
        from factrl.harness.services.models import saved_random

        if identity.id.startswith("random:") and not saved_random(identity):
            # Its path is the tokenizer's folder, i.e. another model's weights.
            raise HarnessError(f"backend=vllm loads weights from disk, and the random {identity.name} model "
                               f"(model.source=random) has none there; `harness run` and `harness eval` save it "
                               f"first (disk_models.save_random), or pass a saved copy as model.path=DIR.")
        try:
            import torch
            from vllm import LLM, SamplingParams
            from vllm.lora.request import LoRARequest
        except ImportError as err:
            raise HarnessError(f"backend=vllm needs vLLM on a CUDA machine ({err}); install it with "
                               f"`pip install 'factrl-harness[gpu]'`, or use eval.backend=hf or "
                               f"eval.backend=openai (e.g. against `vllm serve`).") from None
        if not torch.cuda.is_available():
            raise HarnessError("backend=vllm needs a CUDA GPU; use eval.backend=hf on CPU.")
        settings = settings if isinstance(settings, VLLMEvalSettings) else VLLMEvalSettings.from_mapping(settings)
        self.identity, self.model_cfg, self.decoding = identity, model_cfg, decoding
        self.chunk_size = settings.chunk_size
        self.tokenizer = load_tokenizer(identity, model_cfg)
        dtype = str(torch_dtype(model_cfg.get("dtype") if model_cfg is not None else None)).removeprefix("torch.")
        self.engine_args: dict[str, Any] = {
            "model": identity.path, "tokenizer": identity.path, "dtype": dtype,
            "seed": decoding.seed if decoding.seed is not None else 0,
            "gpu_memory_utilization": gpu_share(settings.gpu_memory_utilization, *torch.cuda.mem_get_info()),
            "tensor_parallel_size": settings.tensor_parallel_size,
            "enforce_eager": settings.enforce_eager,
        }
        if settings.max_model_len:
            self.engine_args["max_model_len"] = settings.max_model_len
        self.lora = None
        if adapter:
            self.engine_args.update(enable_lora=True, max_loras=1, max_lora_rank=adapter_rank(Path(adapter)))
            self.lora = LoRARequest("adapter", 1, str(adapter))
        self.llm = LLM(**self.engine_args)
        params: dict[str, Any] = {"max_tokens": decoding.max_new_tokens,
                                  "temperature": decoding.temperature if decoding.do_sample else 0.0,
                                  "repetition_penalty": decoding.repetition_penalty,
                                  "presence_penalty": decoding.presence_penalty}
        if decoding.do_sample:
            params["top_p"] = decoding.top_p
            if decoding.top_k > 0:  # omitted otherwise: vLLM's default considers all tokens
                params["top_k"] = decoding.top_k
            if decoding.seed is not None:
                params["seed"] = decoding.seed
        self.sampling = SamplingParams(**params)


    def generate(self, requests: Sequence[Request]) -> Iterator[tuple[int, Generation]]:
        prompts = [{"prompt_token_ids": self.tokenizer(format_prompt(self.tokenizer, r.question, self.model_cfg,
                                                                     system=r.system),
                                                       add_special_tokens=False)["input_ids"]}
                   for r in requests]
        for start in range(0, len(prompts), self.chunk_size):
            indexes = list(range(start, min(start + self.chunk_size, len(prompts))))
            outputs = self.llm.generate([prompts[i] for i in indexes], self.sampling, use_tqdm=False,
                                        lora_request=self.lora)
            for i, out in zip(indexes, outputs):  # vLLM returns outputs in input order
                choice = out.outputs[0]
                yield i, Generation(choice.text, choice.finish_reason, len(choice.token_ids))

    def close(self) -> None:
        # Free the GPU for whatever runs next in this process (a training run's next step).
        self.llm = None
        try:
            import gc

            import torch

            gc.collect()
            torch.cuda.empty_cache()
        except Exception:  # noqa: BLE001 - best effort
            pass


def build(identity: ModelIdentity, model_cfg: Any, decoding: Decoding, options: dict[str, Any]) -> VLLMBackend:
    """The registry's `generation` entry `vllm` (evals/backends/__init__.py build_backend)."""
    return VLLMBackend(identity, model_cfg, decoding, adapter=options["adapter"], settings=options["settings"])


def provenance(settings: Any, cfg: Any, model_cfg: Any, processes: dict[str, Any]) -> dict[str, Any]:
    """The engine settings that change a completion, and processes."""
    return {**{k: getattr(settings.vllm, k) for k in ("max_model_len", "tensor_parallel_size", "enforce_eager")},
            **processes}


ENTRY = GenerationEntry(build, provenance)  # the registry's `generation` entry `vllm`
