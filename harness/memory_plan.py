"""GPU memory plan of one GRPO step with LoRA, from a model's architecture and the training settings.

Used for the per-model protocol defaults (configs/protocol/model/<model>.yaml: which
`train.micro_batch_size` and `train.gradient_checkpointing` fit one 80 GB GPU, arithmetic in
their comments), by `benchmarks/gpu_step.py` (planned against measured peak memory), and by a
test that every paper model's composed config fits.

Terms (bytes; bf16 weights, b = 2):
- weights: N x b (N = model_shapes.parameter_count).
- lora_state: L x 16 (fp32 LoRA weights, gradients, AdamW m and v; L = lora_parameter_count).
- rollout, HF generate: the KV cache of all Q x C sequences at full length,
  2 x layers x kv_dim x b per token, plus the last-position fp32 logits (x2 for the sampler).
  With vLLM (colocate) the rollout lives inside its reserved share instead:
  vllm_reserved = gpu_memory_utilization x GPU, held during the update unless vLLM sleeps.
- update, per micro-batch of m sequences of T = prompt + completion tokens:
  activations saved for backward per token per layer (flash/SDPA attention, no T^2 term)
      A = b x (12h + 4q + 4kv + 5I) + 4 x 7r
  (norm inputs kept in fp32 and LoRA's fp32 input casts: 12h; q, k, v before and after RoPE and
  the attention output: 4q + 4kv; SwiGLU gate, up, act, product and down's input: 5I; the seven
  LoRA A outputs in fp32: 7r), all layers without checkpointing, or one bf16 layer input per
  layer (b x h) plus one layer's A during its recompute with it;
  logits: m x completion x V x 4, the fp32 log-softmax over the scored tokens. TRL 1.16 fuses the
  LM head and stays far below this (tiles of 4,096 tokens x 32,768 vocabulary), so it is an
  upper bound that keeps the defaults safe if the unfused path runs.
- overhead: 2 GB (CUDA context, cuBLAS workspaces) + 10% of the rest (allocator fragmentation).
Peak = weights + lora_state + vllm_reserved + max(rollout, update) + overhead.
The coefficients are estimates; gpu_step.py prints the plan beside the measured peak.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

from .errors import ConfigError
from .model_shapes import _dims, architecture, lora_parameter_count, parameter_count

GB = 10**9
GPU_BYTES = 80 * GB  # one H100 80GB, the paper's timed unit (PROTOCOL 4)
CONTEXT_BYTES = 2 * GB
FRAGMENTATION = 0.10
DTYPE_BYTES = {"bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "float32": 4, "fp32": 4, "auto": 2, None: 2}


@dataclass(frozen=True)
class MemoryPlan:
    """Planned bytes of each term; `total` is the step's peak."""

    micro_batch: int
    sequences: int
    seq_len: int
    completion_len: int
    gradient_checkpointing: bool
    rollout: str  # "hf" | "vllm"
    parameters: int
    lora_parameters: int
    weights: int
    lora_state: int
    kv_cache: int
    generation_logits: int
    vllm_reserved: int
    vllm_during_update: int
    activations: int
    logits: int

    @property
    def rollout_peak(self) -> int:
        return self.kv_cache + self.generation_logits + self.vllm_reserved

    @property
    def update_peak(self) -> int:
        return self.activations + self.logits + self.vllm_during_update

    @property
    def overhead(self) -> int:
        return CONTEXT_BYTES + int(FRAGMENTATION * (self.weights + self.lora_state
                                                    + max(self.rollout_peak, self.update_peak)))

    @property
    def total(self) -> int:
        return self.weights + self.lora_state + max(self.rollout_peak, self.update_peak) + self.overhead

    def fits(self, budget: int = GPU_BYTES) -> bool:
        return self.total <= budget

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rollout_peak": self.rollout_peak, "update_peak": self.update_peak,
                "overhead": self.overhead, "total": self.total}

    def lines(self) -> list[str]:
        g = lambda n: f"{n / GB:.1f} GB"  # noqa: E731
        return [
            f"parameters {self.parameters / 1e9:.2f}B, LoRA {self.lora_parameters / 1e6:.1f}M; "
            f"{self.sequences} sequences of <= {self.seq_len} tokens, micro-batch {self.micro_batch}, "
            f"gradient checkpointing {'on' if self.gradient_checkpointing else 'off'}, rollout {self.rollout}",
            f"weights {g(self.weights)} + LoRA state {g(self.lora_state)}",
            f"rollout: KV cache {g(self.kv_cache)} + logits {g(self.generation_logits)} + vLLM {g(self.vllm_reserved)}"
            f" = {g(self.rollout_peak)}",
            f"update: activations {g(self.activations)} + logits {g(self.logits)} + vLLM {g(self.vllm_during_update)}"
            f" = {g(self.update_peak)}",
            f"overhead {g(self.overhead)}; peak {g(self.total)} of {g(GPU_BYTES)}",
        ]


def activation_bytes_per_token_layer(arch: Mapping[str, Any], lora_r: int, dtype_bytes: int = 2) -> int:
    """A: bytes one token keeps for backward in one decoder layer (see the module docstring)."""
    h, inter, q, kv, _, _ = _dims(arch)
    return dtype_bytes * (12 * h + 4 * q + 4 * kv + 5 * inter) + 4 * 7 * int(lora_r)


def plan(arch: Mapping[str, Any], *, micro_batch: int, sequences: int, prompt_len: int, completion_len: int,
         lora_r: int, lora_targets: list[str] | tuple[str, ...], gradient_checkpointing: bool,
         dtype_bytes: int = 2, rollout: str = "hf", vllm_fraction: float = 0.0, vllm_sleep: bool = False,
         gpu_bytes: int = GPU_BYTES) -> MemoryPlan:
    """The plan for explicit settings (see the module docstring for each term)."""
    if rollout not in ("hf", "vllm"):
        raise ConfigError(f"rollout={rollout!r}: use hf or vllm")
    h, _, _, kv, _, layers = _dims(arch)
    vocab = int(arch["vocab_size"])
    seq = int(prompt_len) + int(completion_len)
    n, lora = parameter_count(arch), lora_parameter_count(arch, lora_r, list(lora_targets))
    a_layer = activation_bytes_per_token_layer(arch, lora_r, dtype_bytes)
    tokens = micro_batch * seq
    if gradient_checkpointing:
        activations = tokens * (layers * dtype_bytes * h + a_layer)
    else:
        activations = tokens * layers * a_layer
    hf = rollout == "hf"
    reserved = int(vllm_fraction * gpu_bytes) if not hf else 0
    return MemoryPlan(
        micro_batch=micro_batch, sequences=sequences, seq_len=seq, completion_len=int(completion_len),
        gradient_checkpointing=bool(gradient_checkpointing), rollout=rollout, parameters=n, lora_parameters=lora,
        weights=n * dtype_bytes, lora_state=16 * lora,
        kv_cache=sequences * seq * 2 * layers * kv * dtype_bytes if hf else 0,
        generation_logits=sequences * vocab * 4 * 2 if hf else 0,
        vllm_reserved=reserved, vllm_during_update=0 if vllm_sleep else reserved,
        activations=activations, logits=micro_batch * int(completion_len) * vocab * 4,
    )


def _vllm_settings(train: Any) -> tuple[float, bool]:
    """(gpu_memory_utilization, sleep) from `train.vllm.*` or the older `train.vllm_gpu_memory_utilization`."""
    nested = train.get("vllm") if hasattr(train, "get") else None
    nested = nested if isinstance(nested, Mapping) or hasattr(nested, "get") else {}
    fraction = (nested or {}).get("gpu_memory_utilization") if nested else None
    if fraction is None:
        fraction = train.get("vllm_gpu_memory_utilization", 0.3)
    sleep = bool((nested or {}).get("enable_sleep_mode", False)) if nested else False
    return float(fraction), sleep


def plan_for_config(cfg: Any, *, gpu_bytes: int = GPU_BYTES) -> MemoryPlan:
    """The plan of a composed run config (cfg.model.architecture, cfg.train, cfg.lora)."""
    from .training.engine import batch_geometry

    arch = architecture(cfg.model)
    train = cfg.train
    geometry = batch_geometry(train)
    fraction, sleep = _vllm_settings(train)
    return plan(arch, micro_batch=geometry["per_device_train_batch_size"], sequences=geometry["generation_batch_size"],
                prompt_len=int(train.max_prompt_length), completion_len=int(train.max_completion_length),
                lora_r=int(cfg.lora.r), lora_targets=list(cfg.lora.target_modules),
                gradient_checkpointing=bool(train.get("gradient_checkpointing", False)),
                dtype_bytes=DTYPE_BYTES.get(cfg.model.get("dtype"), 2),
                rollout="vllm" if bool(train.get("use_vllm", False)) else "hf",
                vllm_fraction=fraction, vllm_sleep=sleep, gpu_bytes=gpu_bytes)
