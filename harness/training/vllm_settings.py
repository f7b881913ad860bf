"""`train.use_vllm` and `train.vllm.*` -> TRL 1.16 GRPOConfig's vLLM fields, validated.

Two modes (BASELINES 1.1; harness/training/README.md has the recipes):
- colocate: each training process runs its own vLLM engine on its own GPU. The engine takes
  `gpu_memory_utilization` of the GPU (the rest is left to training), its context is
  `max_model_length` (default max_prompt_length + max_completion_length: a rollout never needs
  more, and a smaller context means a smaller KV-cache reservation), and with
  `enable_sleep_mode` its weights and KV cache are offloaded between rollouts so the optimizer
  step gets the memory back.
- server: `trl vllm-serve` runs on GPUs of its own; the trainer talks to it at
  `server_host:server_port` (or `server_base_url`), waiting up to `server_timeout` s for it.
  Its memory share and tensor parallelism are the server's command-line options.
Both: TRL corrects the mismatch between vLLM's and the trainer's log-probs by importance
sampling (`importance_sampling_*`); those fields are passed explicitly from the config, so the
objective of a vLLM run is the run's setting (and in its hash), not a TRL default.
"""
from __future__ import annotations

from typing import Any

from ..errors import ConfigError

MODES = ("colocate", "server")
IS_MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")


def vllm_args(train: Any) -> dict[str, Any]:
    """GRPOConfig keyword arguments for vLLM rollouts from the `train` config node.

    Always returns every field (TRL ignores them when use_vllm is false), so the mapping is
    checked on machines without vLLM too.
    """
    node = train.get("vllm") or {}
    known = ("mode", "max_model_length", "enable_sleep_mode", "gpu_memory_utilization", "tensor_parallel_size",
             "server_base_url", "server_host", "server_port", "server_timeout", "importance_sampling_correction",
             "importance_sampling_mode", "importance_sampling_clip_max", "importance_sampling_clip_min")
    unknown = sorted(set(node) - set(known))
    if unknown:
        raise ConfigError(f"train.vllm.{unknown[0]} is not a vLLM setting; known: {', '.join(known)}")
    mode = str(node.get("mode", "colocate"))
    if mode not in MODES:
        raise ConfigError(f"train.vllm.mode={mode!r}: use 'colocate' (an engine in each training process) or "
                          f"'server' (`trl vllm-serve` on separate GPUs)")
    needed = int(train.max_prompt_length) + int(train.max_completion_length)
    length = node.get("max_model_length")
    length = needed if length in (None, "") else int(length)
    if length < needed:
        raise ConfigError(f"train.vllm.max_model_length={length} is under train.max_prompt_length + "
                          f"train.max_completion_length = {needed}; raise it or leave it null")
    share = node.get("gpu_memory_utilization")
    # The older key train.vllm_gpu_memory_utilization (protocol files set it) when the new one is null.
    share = float(train.get("vllm_gpu_memory_utilization", 0.3) if share in (None, "") else share)
    if not 0.0 < share <= 1.0:
        raise ConfigError(f"train.vllm.gpu_memory_utilization={share} must be in (0, 1] (the GPU share of the "
                          f"colocated engine)")
    parallel = int(node.get("tensor_parallel_size", 1))
    port = int(node.get("server_port", 8000))
    timeout = float(node.get("server_timeout", 240.0))
    if parallel < 1 or not 0 < port < 65536 or timeout <= 0:
        raise ConfigError(f"train.vllm: tensor_parallel_size={parallel} must be >= 1, server_port={port} in "
                          f"1-65535 and server_timeout={timeout} > 0")
    base_url = node.get("server_base_url")
    return {**_importance_sampling(node), 
        "use_vllm": bool(train.get("use_vllm", False)),
        "vllm_mode": mode,
        "vllm_max_model_length": length,
        "vllm_enable_sleep_mode": bool(node.get("enable_sleep_mode", True)) and mode == "colocate",
        "vllm_gpu_memory_utilization": share,
        "vllm_tensor_parallel_size": parallel,
        "vllm_server_base_url": str(base_url) if base_url not in (None, "") else None,
        "vllm_server_host": str(node.get("server_host", "127.0.0.1")),
        "vllm_server_port": port,
        "vllm_server_timeout": timeout,
    }


def _importance_sampling(node: Any) -> dict[str, Any]:
    """TRL's vLLM importance-sampling fields, always passed (configs/train/default.yaml says why)."""
    mode = str(node.get("importance_sampling_mode", "sequence_mask"))
    if mode not in IS_MODES:
        raise ConfigError(f"train.vllm.importance_sampling_mode={mode!r}: use one of {', '.join(IS_MODES)}")
    low, high = node.get("importance_sampling_clip_min"), node.get("importance_sampling_clip_max")
    low = None if low in (None, "") else float(low)
    high = None if high in (None, "") else float(high)
    if low is not None and high is not None and low >= high:
        raise ConfigError(f"train.vllm.importance_sampling_clip_min={low} must be below importance_sampling_clip_max="
                          f"{high}")
    correction = bool(node.get("importance_sampling_correction", True))
    if correction and mode.endswith("_truncate") and low is None and high is None:
        raise ConfigError(f"train.vllm.importance_sampling_mode={mode} needs importance_sampling_clip_max or _min")
    return {"vllm_importance_sampling_correction": correction, "vllm_importance_sampling_mode": mode,
            "vllm_importance_sampling_clip_max": high, "vllm_importance_sampling_clip_min": low}
