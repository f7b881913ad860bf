"""`train.use_vllm` and `train.vllm.*` -> TRL 1.16 GRPOConfig's vLLM fields, validated.

Two modes (docs/BASELINES.md §1.1; harness/training/README.md has the recipes):
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

from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigError
from ..core.settings import Settings, in_range, plain

MODES = ("colocate", "server")
IS_MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")


@dataclass(frozen=True)
class VLLMSettings(Settings):
    """`train.vllm.*` (configs/train/default.yaml documents each key and holds its default)."""

    OWNER = "train.vllm"
    DEFAULTS = "train/default.yaml:vllm"
    RANGES = {"max_model_length": "[1, inf)", "gpu_memory_utilization": "(0, 1]", "tensor_parallel_size": "[1, inf)",
              "server_port": "[1, 65535]", "server_timeout": "(0, inf)", "importance_sampling_clip_max": "(0, inf)",
              "importance_sampling_clip_min": "[0, inf)"}

    mode: str
    max_model_length: int | None  # None: max_prompt_length + max_completion_length
    enable_sleep_mode: bool
    gpu_memory_utilization: float | None  # None: train.vllm_gpu_memory_utilization (the older key)
    tensor_parallel_size: int
    server_base_url: str | None
    server_host: str
    server_port: int
    server_timeout: float
    importance_sampling_correction: bool
    importance_sampling_mode: str
    importance_sampling_clip_max: float | None
    importance_sampling_clip_min: float | None

    def __post_init__(self) -> None:
        if self.importance_sampling_mode not in IS_MODES:
            raise ValueError(f"importance_sampling_mode={self.importance_sampling_mode!r}: use one of "
                             f"{', '.join(IS_MODES)}")
        low, high = self.importance_sampling_clip_min, self.importance_sampling_clip_max
        if low is not None and high is not None and low >= high:
            raise ValueError(f"importance_sampling_clip_min={low} must be below importance_sampling_clip_max={high}")
        if self.importance_sampling_correction and self.importance_sampling_mode.endswith("_truncate") \
                and low is None and high is None:
            raise ValueError(f"importance_sampling_mode={self.importance_sampling_mode} needs "
                             f"importance_sampling_clip_max or _min")
        if self.mode not in MODES:
            raise ValueError(f"mode={self.mode!r}: use 'colocate' (an engine in each training process) or "
                             f"'server' (`trl vllm-serve` on separate GPUs)")
        in_range("tensor_parallel_size", self.tensor_parallel_size, 1)
        in_range("server_port", self.server_port, 1, 65535)
        if self.server_timeout <= 0:
            raise ValueError(f"server_timeout={self.server_timeout} must be > 0")
        if self.server_base_url == "":
            object.__setattr__(self, "server_base_url", None)


def vllm_args(train: Any) -> dict[str, Any]:
    """GRPOConfig keyword arguments for vLLM rollouts from the `train` config node.

    Always returns every field (TRL ignores them when use_vllm is false), so the mapping is
    checked on machines without vLLM too.
    """
    node = VLLMSettings.from_mapping(train.get("vllm"))
    needed = int(train.max_prompt_length) + int(train.max_completion_length)
    length = needed if node.max_model_length is None else node.max_model_length
    if length < needed:
        raise ConfigError(f"train.vllm.max_model_length={length} is under train.max_prompt_length + "
                          f"train.max_completion_length = {needed}; raise it or leave it null")
    # The older key train.vllm_gpu_memory_utilization (protocol files set it) when the new one is null.
    share = float(plain(train.vllm_gpu_memory_utilization) if node.gpu_memory_utilization is None
                  else node.gpu_memory_utilization)
    if not 0.0 < share <= 1.0:
        raise ConfigError(f"train.vllm.gpu_memory_utilization={share} must be in (0, 1] (the GPU share of the "
                          f"colocated engine)")
    return {
        "use_vllm": bool(train.use_vllm),
        "vllm_mode": node.mode,
        "vllm_max_model_length": length,
        "vllm_enable_sleep_mode": node.enable_sleep_mode and node.mode == "colocate",
        "vllm_gpu_memory_utilization": share,
        "vllm_tensor_parallel_size": node.tensor_parallel_size,
        "vllm_server_base_url": node.server_base_url,
        "vllm_server_host": node.server_host,
        "vllm_server_port": node.server_port,
        "vllm_server_timeout": node.server_timeout,
        "vllm_importance_sampling_correction": node.importance_sampling_correction,
        "vllm_importance_sampling_mode": node.importance_sampling_mode,
        "vllm_importance_sampling_clip_max": node.importance_sampling_clip_max,
        "vllm_importance_sampling_clip_min": node.importance_sampling_clip_min,
    }
