"""Generation backends, built by name (`eval.backend`): hf, vllm, openai.

Each backend module is imported only when chosen, so `import factrl.evals` pulls in neither
torch nor vLLM nor the OpenAI client.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from factrl.harness.errors import HarnessError, did_you_mean
from factrl.harness.models import ModelIdentity

from .base import Backend, BackendError, Decoding, Generation, Request

BACKENDS = ("hf", "vllm", "openai")

__all__ = ["BACKENDS", "Backend", "BackendError", "Decoding", "Generation", "Request", "build_backend"]


def build_backend(name: str, identity: ModelIdentity, model_cfg: Any, decoding: Decoding, *,
                  adapter: str | Path | None = None, settings: Any = None, batch_size: int = 16,
                  device: str | None = None, model: Any = None, tokenizer: Any = None,
                  hf_fast: bool | str = False) -> Backend:
    """The backend `name` for one model (+ adapter) and decoding preset.

    settings: the backend's own config node (eval.vllm / eval.openai).
    model, tokenizer: an already-loaded model (with its adapter, if any) for the hf backend.
    hf_fast: `eval.hf_fast` (hf backend: merged, prepacked weights on the CPU).
    """
    if name == "hf":
        from .hf import HFBackend

        return HFBackend(identity, model_cfg, decoding, adapter=adapter, batch_size=batch_size, device=device,
                         model=model, tokenizer=tokenizer, fast=hf_fast)
    if name == "vllm":
        from .vllm import VLLMBackend

        return VLLMBackend(identity, model_cfg, decoding, adapter=adapter, settings=settings)
    if name == "openai":
        from .openai import OpenAIBackend

        return OpenAIBackend(identity, model_cfg, decoding, settings=settings)
    raise HarnessError(f"unknown eval.backend '{name}'.{did_you_mean(name, BACKENDS)} Valid: {', '.join(BACKENDS)}.")
