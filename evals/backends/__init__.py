"""Generation backends, built by name (`eval.backend`): the name registry's `generation` kind
(hf, vllm, openai in tree; plugins under the `harness.generation` entry points).

Each backend module is imported only when chosen, so `import factrl.evals` pulls in neither
torch nor vLLM nor the OpenAI client. A backend's registered target is a `GenerationEntry`
(base.py): its `build` and its `provenance`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from factrl.harness.core import registry
from factrl.harness.services.models import ModelIdentity

from .base import Backend, BackendError, Decoding, Generation, GenerationEntry, Request

__all__ = ["Backend", "BackendError", "Decoding", "Generation", "GenerationEntry", "Request", "build_backend"]


def build_backend(name: str, identity: ModelIdentity, model_cfg: Any, decoding: Decoding, *,
                  adapter: str | Path | None = None, settings: Any = None, batch_size: int = 16,
                  device: str | None = None, model: Any = None, tokenizer: Any = None,
                  hf_fast: bool | str = False, hf_shared_prefix: bool = False) -> Backend:
    """The backend `name` for one model (+ adapter) and decoding preset.

    settings: the backend's own config node (eval.vllm / eval.openai).
    model, tokenizer: an already-loaded model (with its adapter, if any) for the hf backend.
    hf_fast: `eval.hf_fast` (hf backend: merged, prepacked weights on the CPU).
    hf_shared_prefix: `eval.hf_shared_prefix` (hf backend: a batch's common prompt prefix prefilled once).
    """
    options = {"adapter": adapter, "settings": settings, "batch_size": batch_size, "device": device, "model": model,
               "tokenizer": tokenizer, "hf_fast": hf_fast, "hf_shared_prefix": hf_shared_prefix}
    return registry.get("generation", name).build(identity, model_cfg, decoding, options)
