"""GPU memory plan of one GRPO step with LoRA, from a model's architecture and the training settings.

Used for the per-model protocol defaults (configs/protocol/model/<model>.yaml: which
`train.micro_batch_size` and `train.gradient_checkpointing` fit one 80 GB GPU, arithmetic in
their comments), by `benchmarks/gpu_step.py` (planned against measured peak memory), and by a
test that every paper model's composed config fits.

Terms (bytes; bf16 weights, b = 2):
- weights: N x b (N = models.shapes.parameter_count).
- lora_state: L x 16 (fp32 LoRA weights, gradients, AdamW m and v; L = lora_parameter_count).
- rollout, HF generate: the KV cache of all Q x C sequences at full length,
  2 x layers x kv_dim x b per token, plus the last-position fp32 logits (x2 for the sampler).
  - dynamic cache (`train.rollout.static_cache=false`): HF's DynamicCache grows each layer's keys
    and values by torch.cat every decode step; the allocator keeps blocks it cannot reuse for the
    next, larger request, about G x rows x (2 x layers x kv_dim x b) x (P x T + T^2 / 2) bytes
    (the sum of every step's size, P prompt and T completion tokens, times G; calibrated below);
  - static cache (the default on CUDA): preallocated once at prompt + limit, nothing grows;
  - merged LoRA (`train.rollout.merge_lora`, on CUDA merged in place): a saved copy of the adapted
    base weights during the rollout (the 7 projections: most of the model).
  With vLLM (colocate) the rollout lives inside its reserved share instead:
  vllm_reserved = gpu_memory_utilization x GPU, held during the update unless vLLM sleeps.
- update, per micro-batch of m sequences of T = prompt + completion tokens:
  activations saved for backward per token per layer (flash/SDPA attention, no T^2 term)
      A = F x (b x (12h + 4q + 4kv + 5I) + 4 x 7r)
  (norm inputs kept in fp32 and LoRA's fp32 input casts: 12h; q, k, v before and after RoPE and
  the attention output: 4q + 4kv; SwiGLU gate, up, act, product and down's input: 5I; the seven
  LoRA A outputs in fp32: 7r; F calibrated below), all layers without checkpointing, or one bf16
  layer input per layer (b x h) plus one layer's A during its recompute with it;
  logits: m x completion x V x 4, the fp32 log-softmax over the scored tokens. TRL 1.16 fuses the
  LM head and stays far below this (tiles of 4,096 tokens x 32,768 vocabulary), so it is an
  upper bound that keeps the defaults safe if the unfused path runs.
- PPO (`algorithm: ppo`, train.ppo.critic): the critic's value step runs on the same micro-batch
  after the policy's backward has freed its graph, so its activations replace the policy's, not
  add to them; its parameters are held throughout.
  - lora: a second adapter of the same rank and targets (critic_state = L x 16) plus the value
    head ((h + 1) x 16); its forward runs outside autocast, so the LoRA path keeps fp32 copies of
    the inputs autocast would keep in bf16: A_critic = A + F x 4 x (h + q + I) per token per layer;
  - full: a second copy of the model, trained: weights N x b, gradients N x b and AdamW's m and v,
    which torch keeps in the parameter's dtype (2 N x b); activations F x b x (12h + 4q + 4kv + 5I).
  With train.ppo.critic=full the run stops before loading the copy when this plan exceeds the GPU
  (`check_full_critic`).
- overhead: CONTEXT_BYTES (CUDA context, cuBLAS workspaces; allocator slack is in F and G).
Peak = weights + lora_state + critic + vllm_reserved + max(rollout, update) + overhead.

Calibration (docs/GPU_CHECK.md): two device peaks (total - free, sampled) of
`benchmarks/gpu_step.py --shape paper --rollout hf` on one H200, random Llama-3.2-3B, 48 rows,
dynamic cache, unmerged LoRA, prompts padded to MEASURED_PROMPT_TOKENS: 17.4 GB at a 256-token
limit and 52.0 GB at 1,000, where the first-principles plan said 31.2 and 50.5 GB. At 256 the
update is the peak and fixes F; at 1,000 the growing cache is, and fixes G (`calibration_points`
recomputes both, tests/shapes/test_memory_plan.py pins them). CONTEXT_BYTES: the env step's device
peak, 1.1 GB with 0.4 GB of its own test tensors, rounded up to 1 GB. Nothing else is measured:
PPO's critic terms, vLLM's share, the static cache and the merged copy are still first-principles.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

from ..core.errors import ConfigError
from ..services.models.shapes import _dims, architecture, lora_parameter_count, parameter_count

GB = 10**9
GPU_BYTES = 80 * GB  # one H100 80GB, the paper's timed unit (docs/PROTOCOL.md §4)
CONTEXT_BYTES = 1 * GB
# Calibrated on one H200 (module docstring; tests/shapes/test_memory_plan.py recomputes them).
ACTIVATION_FACTOR = 0.84
CACHE_GROWTH = 0.0108
MEASURED_PROMPT_TOKENS = 95
MEASURED = ({"completion": 256, "peak": 17.4 * GB, "planned_before": 31.2 * GB},
            {"completion": 1000, "peak": 52.0 * GB, "planned_before": 50.5 * GB})
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
    critic: str = "none"  # none (GRPO) | lora | full (PPO's train.ppo.critic)
    critic_weights: int = 0  # full: the critic's own copy of the model
    critic_state: int = 0  # trainable critic tensors with gradients and AdamW state (LoRA or full, + value head)
    critic_activations: int = 0  # the value step's forward, saved for its backward
    static_cache: bool = False  # HF rollouts on a preallocated cache (no growth term)
    cache_growth: int = 0  # dynamic cache: blocks the growing cache leaves behind (CACHE_GROWTH)
    merge_copy: int = 0  # merged LoRA on the GPU: the saved copy of the adapted base weights

    @property
    def rollout_peak(self) -> int:
        return self.kv_cache + self.cache_growth + self.merge_copy + self.generation_logits + self.vllm_reserved

    @property
    def update_peak(self) -> int:
        return max(self.activations + self.logits, self.critic_activations) + self.vllm_during_update

    @property
    def held(self) -> int:
        """Bytes held through the whole step: weights and trainable state (policy and critic)."""
        return self.weights + self.lora_state + self.critic_weights + self.critic_state

    @property
    def overhead(self) -> int:
        return CONTEXT_BYTES

    @property
    def total(self) -> int:
        return self.held + max(self.rollout_peak, self.update_peak) + self.overhead

    def fits(self, budget: int = GPU_BYTES) -> bool:
        return self.total <= budget

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rollout_peak": self.rollout_peak, "update_peak": self.update_peak,
                "overhead": self.overhead, "total": self.total, "estimate": True}

    def lines(self) -> list[str]:
        g = lambda n: f"{n / GB:.1f} GB"  # noqa: E731
        cache = "static" if self.static_cache else f"dynamic, growth {g(self.cache_growth)}"
        return [
            f"parameters {self.parameters / 1e9:.2f}B, LoRA {self.lora_parameters / 1e6:.1f}M; "
            f"{self.sequences} sequences of <= {self.seq_len} tokens, micro-batch {self.micro_batch}, "
            f"gradient checkpointing {'on' if self.gradient_checkpointing else 'off'}, rollout {self.rollout}",
            f"weights {g(self.weights)} + LoRA state {g(self.lora_state)}",
            f"rollout: KV cache {g(self.kv_cache)} ({cache}) + merged copy {g(self.merge_copy)} + logits "
            f"{g(self.generation_logits)} + vLLM {g(self.vllm_reserved)} = {g(self.rollout_peak)}",
            f"update: activations {g(self.activations)} + logits {g(self.logits)} + vLLM {g(self.vllm_during_update)}"
            f" = {g(self.update_peak)}" + (f" (critic value step: {g(self.critic_activations)})"
                                           if self.critic != "none" else ""),
            *([f"critic ({self.critic}): weights {g(self.critic_weights)} + state {g(self.critic_state)}"]
              if self.critic != "none" else []),
            f"overhead {g(self.overhead)}; peak {g(self.total)} of {g(GPU_BYTES)} "
            f"(an estimate: activations and cache growth calibrated on one H200, docs/GPU_CHECK.md)",
        ]


def activation_bytes_per_token_layer(arch: Mapping[str, Any], lora_r: int, dtype_bytes: int = 2,
                                     factor: float | None = None) -> int:
    """A: bytes one token keeps for backward in one decoder layer (see the module docstring);
    `factor`: F (default ACTIVATION_FACTOR; 1.0 gives the first-principles count)."""
    h, inter, q, kv, _, _ = _dims(arch)
    factor = ACTIVATION_FACTOR if factor is None else factor
    return int(factor * (dtype_bytes * (12 * h + 4 * q + 4 * kv + 5 * inter) + 4 * 7 * int(lora_r)))


def critic_activation_bytes_per_token_layer(arch: Mapping[str, Any], lora_r: int, critic: str,
                                            dtype_bytes: int = 2, factor: float | None = None) -> int:
    """A_critic: what the PPO critic's forward keeps per token per layer (module docstring)."""
    h, inter, q, kv, _, _ = _dims(arch)
    factor = ACTIVATION_FACTOR if factor is None else factor
    if critic == "full":
        return int(factor * dtype_bytes * (12 * h + 4 * q + 4 * kv + 5 * inter))
    return activation_bytes_per_token_layer(arch, lora_r, dtype_bytes, factor) + int(factor * 4 * (h + q + inter))


def kv_bytes_per_token(arch: Mapping[str, Any], dtype_bytes: int = 2) -> int:
    """Keys and values of one token in every layer: 2 x layers x kv_dim x b."""
    _, _, _, kv, _, layers = _dims(arch)
    return 2 * layers * kv * dtype_bytes


def adapted_weight_bytes(arch: Mapping[str, Any], targets: list[str] | tuple[str, ...], dtype_bytes: int = 2) -> int:
    """The base weights LoRA adapts (what an in-place merge saves a copy of)."""
    from ..services.models.shapes import LORA_SHAPES

    h, inter, q, kv, _, layers = _dims(arch)
    return layers * dtype_bytes * sum(LORA_SHAPES[m](h, inter, q, kv)[0] * LORA_SHAPES[m](h, inter, q, kv)[1]
                                      for m in targets if m in LORA_SHAPES)


def plan(arch: Mapping[str, Any], *, micro_batch: int, sequences: int, prompt_len: int, completion_len: int,
         lora_r: int, lora_targets: list[str] | tuple[str, ...], gradient_checkpointing: bool,
         dtype_bytes: int = 2, rollout: str = "hf", vllm_fraction: float = 0.0, vllm_sleep: bool = False,
         gpu_bytes: int = GPU_BYTES, critic: str = "none", static_cache: bool = False, merge: bool = False,
         activation_factor: float | None = None, cache_growth: float | None = None) -> MemoryPlan:
    """The plan for explicit settings (see the module docstring for each term); `critic`: none
    (GRPO) or PPO's lora | full; `static_cache`, `merge`: train.rollout as resolved on CUDA
    (the defaults: the measured runs' dynamic cache and unmerged LoRA); `activation_factor`,
    `cache_growth`: F and G (default: the calibrated constants)."""
    if rollout not in ("hf", "vllm"):
        raise ConfigError(f"rollout={rollout!r}: use hf or vllm")
    if critic not in ("none", "lora", "full"):
        raise ConfigError(f"critic={critic!r}: use none, lora or full")
    h, _, _, kv, _, layers = _dims(arch)
    vocab = int(arch["vocab_size"])
    seq = int(prompt_len) + int(completion_len)
    n, lora = parameter_count(arch), lora_parameter_count(arch, lora_r, list(lora_targets))
    factor = ACTIVATION_FACTOR if activation_factor is None else activation_factor
    growth = CACHE_GROWTH if cache_growth is None else cache_growth
    a_layer = activation_bytes_per_token_layer(arch, lora_r, dtype_bytes, factor)
    tokens = micro_batch * seq
    if gradient_checkpointing:
        activations = tokens * (layers * dtype_bytes * h + a_layer)
    else:
        activations = tokens * layers * a_layer
    hf = rollout == "hf"
    reserved = int(vllm_fraction * gpu_bytes) if not hf else 0
    head = 16 * (h + 1)  # the value head: fp32 weight and bias, gradient, AdamW m and v
    critic_weights = n * dtype_bytes if critic == "full" else 0
    critic_state = {"none": 0, "lora": 16 * lora + head, "full": 3 * n * dtype_bytes + head}[critic]
    c_layer = (critic_activation_bytes_per_token_layer(arch, lora_r, critic, dtype_bytes, factor)
               if critic != "none" else 0)
    if critic == "none":
        critic_activations = 0
    elif gradient_checkpointing:
        critic_activations = tokens * (layers * dtype_bytes * h + c_layer)
    else:
        critic_activations = tokens * layers * c_layer
    per_token = kv_bytes_per_token(arch, dtype_bytes)
    completion = int(completion_len)
    grown = growth * sequences * per_token * (int(prompt_len) * completion + completion ** 2 / 2)
    return MemoryPlan(
        critic=critic, critic_weights=critic_weights, critic_state=critic_state,
        critic_activations=critic_activations,
        micro_batch=micro_batch, sequences=sequences, seq_len=seq, completion_len=completion,
        gradient_checkpointing=bool(gradient_checkpointing), rollout=rollout, parameters=n, lora_parameters=lora,
        weights=n * dtype_bytes, lora_state=16 * lora,
        kv_cache=sequences * seq * per_token if hf else 0,
        generation_logits=sequences * vocab * 4 * 2 if hf else 0,
        vllm_reserved=reserved, vllm_during_update=0 if vllm_sleep else reserved,
        activations=activations, logits=micro_batch * completion * vocab * 4,
        static_cache=bool(static_cache) and hf, cache_growth=int(grown) if hf and not static_cache else 0,
        merge_copy=adapted_weight_bytes(arch, lora_targets, dtype_bytes) if hf and merge else 0,
    )


def calibration_points(arch: Mapping[str, Any], *, lora_r: int = 128, targets: list[str] | tuple[str, ...] = (
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")) -> dict[str, float]:
    """F and G solved from MEASURED on `arch` (Llama-3.2-3B, the paper batch: 48 rows, micro-batch 4,
    no checkpointing, dynamic cache, unmerged LoRA, prompts of MEASURED_PROMPT_TOKENS): F so that the
    update reaches the 256-token peak, G so that the growing cache reaches the 1,000-token one.
    Also says whether each point's peak is the phase assumed (`consistent`)."""
    def at(completion, f, g):
        return plan(arch, micro_batch=4, sequences=48, prompt_len=MEASURED_PROMPT_TOKENS, completion_len=completion,
                    lora_r=lora_r, lora_targets=list(targets), gradient_checkpointing=False,
                    activation_factor=f, cache_growth=g)

    short, long_ = MEASURED
    base = at(short["completion"], 1.0, 0.0)
    room = short["peak"] - base.held - base.overhead - base.logits
    factor = room / base.activations
    unit = at(long_["completion"], factor, 1.0)
    still = at(long_["completion"], factor, 0.0)
    growth = (long_["peak"] - still.held - still.overhead - still.rollout_peak) / unit.cache_growth
    first, second = at(short["completion"], factor, growth), at(long_["completion"], factor, growth)
    return {"activation_factor": factor, "cache_growth": growth,
            "consistent": first.update_peak >= first.rollout_peak and second.rollout_peak >= second.update_peak}


def _vllm_settings(train: Any) -> tuple[float, bool]:
    """(gpu_memory_utilization, sleep) from `train.vllm.*` or the older `train.vllm_gpu_memory_utilization`."""
    from .vllm_settings import VLLMSettings

    node = VLLMSettings.from_mapping(train.vllm)
    fraction = train.vllm_gpu_memory_utilization if node.gpu_memory_utilization is None else node.gpu_memory_utilization
    return float(fraction), node.enable_sleep_mode


def _algorithm(cfg: Any) -> str:
    from ..core.registry import get_method

    method = cfg.get("method") if hasattr(cfg, "get") else None
    if method is None or not method.get("name"):
        return "grpo"
    return str(getattr(get_method(str(method.name)), "algorithm", "grpo"))


def plan_for_config(cfg: Any, *, gpu_bytes: int = GPU_BYTES) -> MemoryPlan:
    """The plan of a composed run config (cfg.model.architecture, cfg.train, cfg.lora; PPO's
    critic and minibatch geometry for a method with algorithm ppo)."""
    from .args import batch_geometry, ppo_geometry
    from .settings import PPOSettings

    arch = architecture(cfg.model)
    train = cfg.train
    critic = "none"
    if _algorithm(cfg) == "ppo":
        settings = PPOSettings.from_config(train)
        geometry, critic = ppo_geometry(train, settings, processes=1), settings.critic
    else:
        geometry = batch_geometry(train, processes=1)
    fraction, sleep = _vllm_settings(train)
    rollout = train.get("rollout") if hasattr(train, "get") else None
    if rollout is not None:  # train.rollout as it resolves on CUDA (the plan is for one GPU)
        from .settings import RolloutSettings

        resolved = RolloutSettings.from_mapping(rollout).resolved("cuda")
        static, merge = resolved["static_cache"], resolved["merge_lora"]
    else:
        static, merge = False, False
    return plan(arch, static_cache=static, merge=merge, micro_batch=geometry["per_device_train_batch_size"], sequences=geometry["generation_batch_size"],
                prompt_len=int(train.max_prompt_length), completion_len=int(train.max_completion_length),
                lora_r=int(cfg.lora.r), lora_targets=list(cfg.lora.target_modules),
                gradient_checkpointing=bool(train.gradient_checkpointing),
                dtype_bytes=DTYPE_BYTES.get(cfg.model.get("dtype"), 2),
                rollout="vllm" if bool(train.use_vllm) else "hf",
                vllm_fraction=fraction, vllm_sleep=sleep, gpu_bytes=gpu_bytes, critic=critic)


def check_full_critic(cfg: Any, gpu_bytes: int | None = None) -> MemoryPlan | None:
    """train.ppo.critic=full: stop (ConfigError) when the plan exceeds the GPU, before the second
    copy of the model is loaded. `gpu_bytes`: the device's memory (default: CUDA device 0's;
    without CUDA, or for a model without an `architecture:` block, nothing is checked)."""
    if "architecture" not in (cfg.model or {}) or not cfg.model.get("architecture"):
        return None
    if gpu_bytes is None:
        import torch

        if not torch.cuda.is_available():
            return None
        gpu_bytes = int(torch.cuda.get_device_properties(0).total_memory)
    result = plan_for_config(cfg, gpu_bytes=gpu_bytes)
    if result.critic == "full" and not result.fits(gpu_bytes):
        raise ConfigError(f"train.ppo.critic=full: the planned peak of {result.total / GB:.1f} GB exceeds this GPU's "
                          f"{gpu_bytes / GB:.1f} GB (the critic's own weights, gradients and AdamW state are "
                          f"{(result.critic_weights + result.critic_state) / GB:.1f} GB; an estimate, "
                          f"harness/training/memory_plan.py); use train.ppo.critic=lora, or a larger GPU")
    return result
