"""The evaluation backends' own settings: `eval.openai.*` and `eval.vllm.*` (configs/eval/base.yaml
documents each key and holds every default), and `decoding_of`, the run's decoding preset.

No torch or vLLM here: `harness run` parses them before anything loads.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from factrl.harness.core.settings import Settings

from .base import Decoding

PREFIX_ENDPOINTS = ("completions", "chat-continue")


@dataclass(frozen=True)
class OpenAIEvalSettings(Settings):
    """`eval.openai.*`: eval.backend=openai, an OpenAI-compatible server."""

    OWNER = "eval.openai"
    DEFAULTS = "eval/base.yaml:openai"
    RANGES = {"concurrency": "[1, inf)", "timeout": "(0, inf)", "max_retries": "[0, inf)", "backoff": "[0, inf)"}

    base_url: str | None  # required by backend=openai
    model: str | None  # served model name; None: model.id
    api_key_env: str  # the environment variable holding the key
    concurrency: int
    timeout: float
    max_retries: int
    backoff: float
    prefix_endpoint: str  # completions | chat-continue (models with a response_prefix)
    extra_body: dict[str, Any]

    def __post_init__(self) -> None:
        if self.prefix_endpoint not in PREFIX_ENDPOINTS:
            raise ValueError(f"prefix_endpoint={self.prefix_endpoint!r}: use completions (any server) or "
                             f"chat-continue (vLLM's server only).")


@dataclass(frozen=True)
class VLLMEvalSettings(Settings):
    """`eval.vllm.*`: eval.backend=vllm, the offline engine."""

    OWNER = "eval.vllm"
    DEFAULTS = "eval/base.yaml:vllm"
    RANGES = {"gpu_memory_utilization": "(0, 1]", "max_model_len": "[1, inf)", "tensor_parallel_size": "[1, inf)",
              "chunk_size": "[1, inf)"}

    gpu_memory_utilization: float
    max_model_len: int | None  # None: the model's
    tensor_parallel_size: int
    enforce_eager: bool
    chunk_size: int  # requests per generate() call


def decoding_of(model_cfg: Any, *, max_new_tokens: int | None = None, seed: int | None = None) -> Decoding:
    """The decoding preset of a `model` node (its `decoding`), with `eval.max_new_tokens` and the
    run's seed applied (Decoding.from_config)."""
    node = model_cfg.get("decoding") if model_cfg is not None else None
    return Decoding.from_config(node, max_new_tokens=max_new_tokens, seed=seed)


__all__ = ["OpenAIEvalSettings", "PREFIX_ENDPOINTS", "VLLMEvalSettings", "decoding_of"]
