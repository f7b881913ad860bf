"""`train.*` as checked settings: TrainSettings (the node), PPOSettings (`train.ppo.*` plus the KL
beta), VLLMSettings (`train.vllm.*`, vllm_settings.py). No torch here: `harness run` checks
them before it loads anything or makes a run directory (a wrong type fails in a second).

configs/train/default.yaml is the one place of every default and its source; a key there
needs a field here (and the reverse), so a typo such as `+train.stepz=2` is refused instead of
ignored. The engine reads the validated `cfg.train` node, or these classes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.settings import GIVEN, Settings, coerce, in_range
from .vllm_settings import VLLMSettings

SCALE_REWARDS = ("group", "none")
KL_ESTIMATORS = ("k3", "k3_rlfh")  # train.ppo.kl_estimator (training/gae.py computes them)


@dataclass(frozen=True)
class TrainSettings(Settings):
    """`train.*` (configs/train/default.yaml documents each key)."""

    OWNER = "train"
    DEFAULTS = "train/default.yaml"
    RANGES = {"steps": "[1, inf)", "questions_per_step": "[1, inf)", "completions_per_question": "[1, inf)",
              "learning_rate": "(0, 1]", "beta": "[0, inf)", "max_prompt_length": "[1, inf)",
              "max_completion_length": "[1, inf)", "temperature": "(0, inf)", "top_p": "(0, 1]", "top_k": "[0, inf)",
              "repetition_penalty": "(0, inf)", "presence_penalty": "[-2, 2]", "seed": "[0, 4294967295]",
              "save_steps": "[1, inf)", "adam_betas": "[0, 1)", "weight_decay": "[0, inf)", "warmup_ratio": "[0, 1)",
              "entropy_coef": "[0, inf)", "epsilon_low": "(0, 1)", "epsilon_high": "(0, inf)",
              "advantage_std_floor": "[0, inf)", "advantage_epsilon": "[0, inf)",
              "vllm_gpu_memory_utilization": "(0, 1]", "micro_batch_size": "[1, inf)", "logging_steps": "[1, inf)",
              "loss_chunks": "[-1, inf)"}  # loss_chunks: -1 or >= 1 (__post_init__ refuses 0)

    steps: int
    questions_per_step: int
    completions_per_question: int
    learning_rate: float
    beta: float  # the KL coefficient: TRL's for GRPO methods, in-reward k3 for PPO methods
    max_prompt_length: int
    max_completion_length: int
    temperature: float
    top_p: float
    top_k: int  # 0: off (rollout sampling, harness/training/sampling.py)
    repetition_penalty: float
    presence_penalty: float
    seed: int
    save_steps: int
    optim: str  # optimizer and schedule: harness/training/optim.py checks the names
    adam_betas: list[float]
    weight_decay: float
    lr_scheduler: str
    lr_scheduler_kwargs: dict[str, Any]
    warmup_ratio: float
    loss_type: str  # TRL's loss aggregation (TRL checks the name)
    entropy_coef: float
    epsilon_low: float
    epsilon_high: float | None
    scale_rewards: str
    advantage_std_floor: float
    advantage_epsilon: float
    use_vllm: bool
    vllm: VLLMSettings
    vllm_gpu_memory_utilization: float
    bf16: bool | str  # auto: bf16 on CUDA, fp32 on CPU
    mask_truncated_completions: bool
    loss_chunks: int | None  # None: TRL's aggregation; n or -1: unsloth's chunk average (training/losses.py)
    kl_bias_correction: bool
    gradient_checkpointing: bool
    micro_batch_size: int | None
    logging_steps: int
    require_update: bool  # fail the run when no trainable weight moved (training/adapter_delta.py)
    ppo: dict[str, Any]  # checked as PPOSettings (with beta as its KL coefficient)
    rollout: "RolloutSettings"
    logprob: "LogprobSettings"

    def __post_init__(self) -> None:
        for key in ("steps", "questions_per_step", "completions_per_question", "max_prompt_length",
                    "max_completion_length", "save_steps", "logging_steps"):
            in_range(key, getattr(self, key), 1)
        if self.micro_batch_size is not None:
            in_range("micro_batch_size", self.micro_batch_size, 1)
        if self.scale_rewards not in SCALE_REWARDS:
            raise ValueError(f"scale_rewards={self.scale_rewards!r}: token-level advantages support 'group' "
                             f"(docs/PROTOCOL.md §3) or 'none'")
        if len(self.adam_betas) != 2 or not all(0.0 <= b < 1.0 for b in self.adam_betas):
            raise ValueError(f"adam_betas={list(self.adam_betas)}: give [beta1, beta2], each in [0, 1)")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ValueError(f"warmup_ratio={self.warmup_ratio} must lie in [0, 1)")
        if self.advantage_std_floor < 0 or self.advantage_epsilon < 0:
            raise ValueError(f"advantage_std_floor={self.advantage_std_floor} and train.advantage_epsilon="
                             f"{self.advantage_epsilon} must be >= 0")
        if self.loss_chunks is not None and (self.loss_chunks == 0 or self.loss_chunks < -1):
            raise ValueError(f"loss_chunks={self.loss_chunks}: use null (TRL's aggregation), -1 (one chunk per row, "
                             f"unsloth's default) or a count >= 1")
        if self.bf16 not in (True, False, "auto"):
            raise ValueError(f"bf16={self.bf16!r}: use auto, true or false")
        if not self.beta >= 0:  # before train.ppo's check, which knows it as its kl_coef
            raise ValueError(f"beta={self.beta:g} is out of range; allowed: {self.RANGES['beta']}")
        self.ppo_settings()  # a bad train.ppo.* value fails here too

    def ppo_settings(self) -> "PPOSettings":
        return PPOSettings.from_mapping(self.ppo, kl_coef=self.beta)


AUTO_BOOL = ("auto", True, False)
LOGPROB_HEADS = ("auto", "fused", "plain")  # training/logprobs.py


@dataclass(frozen=True)
class RolloutSettings(Settings):
    """`train.rollout.*`: how HF rollouts generate (models/merged_linears.py, training/fast_generate.py);
    same sampled distribution up to float rounding, so a setting of speed, recorded with the run.
    `auto` resolves by the device the policy generates on (`resolved(device_type)`)."""

    OWNER = "train.rollout"
    DEFAULTS = "train/default.yaml:rollout"
    RANGES = {"prompt_bucket": "[0, inf)"}

    merge_lora: bool | str  # auto: on the CPU and CUDA; true: everywhere the policy is not sharded
    prepack: bool | str  # auto: oneDNN-prepacked weights where oneDNN runs (CPU)
    shared_prefill: bool  # each distinct prompt prefilled once, its rows generate from copies of its cache
    static_cache: bool | str  # auto: on CUDA; a preallocated KV cache (no growth by concatenation)
    compile: bool | str  # auto: on CUDA with a static cache and triton; the decode step compiled (CUDA graphs)
    prompt_bucket: int  # with a static cache: prompts left-padded to a multiple of this (0: off)
    grouped_sdpa: bool | str  # auto: on the CPU; grouped-query attention without copying keys and values

    def __post_init__(self) -> None:
        for key in ("merge_lora", "prepack", "static_cache", "compile", "grouped_sdpa"):
            if getattr(self, key) not in AUTO_BOOL:
                raise ValueError(f"{key}={getattr(self, key)!r}: use auto, true or false")
        if self.compile is True and self.static_cache is False:
            raise ValueError("compile=true needs a static KV cache: set train.rollout.static_cache=auto or true "
                             "(a dynamic cache changes shape every decode step)")

    def merge(self, device_type: str) -> bool:
        return self.merge_lora is True or (self.merge_lora == "auto" and device_type in ("cpu", "cuda"))

    def pack(self, device_type: str) -> bool:
        return self.prepack is True or (self.prepack == "auto" and device_type == "cpu")

    def static(self, device_type: str) -> bool:
        return self.static_cache is True or (self.static_cache == "auto" and device_type == "cuda")

    def compiled(self, device_type: str) -> bool:
        if not self.static(device_type):
            return False
        if self.compile is True:
            return True
        if self.compile is False or device_type != "cuda":
            return False
        import importlib.util

        return importlib.util.find_spec("triton") is not None  # inductor's CUDA kernels need it

    def resolved(self, device_type: str) -> dict[str, Any]:
        """What `auto` means on this device (recorded in train/components.json, `fast_path`)."""
        static, compiled = self.static(device_type), self.compiled(device_type)
        # torch.compile cannot lower oneDNN's prepacked weights (inductor prepacks frozen linears itself)
        return {"device": device_type, "merge_lora": self.merge(device_type),
                "prepack": self.pack(device_type) and not compiled, "static_cache": static, "compile": compiled,
                "prompt_bucket": int(self.prompt_bucket) if static else 0,
                "shared_prefill": bool(self.shared_prefill) and not static,
                "grouped_sdpa": self.grouped_sdpa is True or (self.grouped_sdpa == "auto" and device_type == "cpu")}


@dataclass(frozen=True)
class LogprobSettings(Settings):
    """`train.logprob.*`: how the trainer scores completions (training/logprobs.py); equal to
    TRL's fused pass up to float rounding."""

    OWNER = "train.logprob"
    DEFAULTS = "train/default.yaml:logprob"

    shared_prefix: bool  # rows sharing a prompt run it once (one process, no gradient checkpointing)
    head: str  # auto: plain on the CPU while the logits fit, TRL's fused head otherwise | fused | plain

    def __post_init__(self) -> None:
        if self.head not in LOGPROB_HEADS:
            raise ValueError(f"head={self.head!r}: use one of {', '.join(LOGPROB_HEADS)}")


@dataclass(frozen=True)
class PPOSettings(Settings):
    """`train.ppo.*` (configs/train/default.yaml holds each default and its source) plus the KL
    coefficient, `train.beta`, handed over by `from_config`."""

    OWNER = "train.ppo"
    DEFAULTS = "train/default.yaml:ppo"
    RANGES = {"gamma": "(0, 1]", "lam": "[0, 1]", "epochs": "[1, inf)", "minibatches": "[1, inf)",
              "cliprange": "(0, inf)", "cliprange_value": "(0, inf)", "vf_coef": "[0, inf)",
              "critic_learning_rate": "(0, 1]", "reward_clip": "(0, inf)", "kl_coef": "[0, inf)"}

    gamma: float
    lam: float
    epochs: int
    minibatches: int
    cliprange: float
    cliprange_value: float
    vf_coef: float
    critic: str
    critic_learning_rate: float
    whiten: bool
    reward_clip: float
    kl_estimator: str  # k3 (OpenRLHF, TRL) | k3_rlfh (RLFH's vendored, un-negated copy)
    kl_coef: float = field(metadata=GIVEN)  # train.beta: the in-reward k3 KL coefficient

    def __post_init__(self) -> None:
        if self.kl_estimator not in KL_ESTIMATORS:
            raise ValueError(f"kl_estimator={self.kl_estimator!r}: use k3 (OpenRLHF, TRL: exp(ref - logp) - "
                             f"(ref - logp) - 1) or k3_rlfh (RLFH's copy: logp - ref)")
        if self.critic not in ("lora", "full"):
            raise ValueError(f"critic={self.critic!r}: use 'lora' (value head on a second adapter) or 'full' "
                             f"(a separate copy of the model)")
        if self.epochs < 1 or self.minibatches < 1:
            raise ValueError(f"epochs={self.epochs} and train.ppo.minibatches={self.minibatches} must both be >= 1")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"gamma={self.gamma} must be in (0, 1]")
        if not 0.0 <= self.lam <= 1.0:
            raise ValueError(f"lam={self.lam} must be in [0, 1]")

    @classmethod
    def from_config(cls, train_cfg: Any) -> "PPOSettings":
        """From the `train` node: its `ppo` node (absent keys: the YAML's) and `beta`."""
        return cls.from_mapping(train_cfg.get("ppo"), kl_coef=coerce(train_cfg.get("beta"), float, "train.beta"))


@dataclass(frozen=True)
class LoRASettings(Settings):
    """`lora.*` (configs/lora/default.yaml; docs/PROTOCOL.md §4), checked before a model loads
    (harness/training/args.py builds peft's LoraConfig from the same node)."""

    OWNER = "lora"
    DEFAULTS = "lora/default.yaml"
    RANGES = {"r": "[1, inf)", "alpha": "(0, inf)", "dropout": "[0, 1)"}

    r: int
    alpha: float
    dropout: float
    bias: str
    target_modules: list[str]

    def __post_init__(self) -> None:
        if self.bias not in ("none", "all", "lora_only"):
            raise ValueError(f"bias={self.bias!r}: choose one of none, all, lora_only (peft's LoraConfig)")
        if not self.target_modules:
            raise ValueError("target_modules=[]: name the modules the adapter wraps (docs/PROTOCOL.md §4: the seven "
                             "projections)")


__all__ = ["LoRASettings", "LogprobSettings", "PPOSettings", "RolloutSettings", "SCALE_REWARDS", "TrainSettings",
           "VLLMSettings"]
