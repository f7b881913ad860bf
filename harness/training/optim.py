"""Optimizer and learning-rate schedule: `train.*` keys -> TrainingArguments fields, the 8-bit
fallback, and the `optimizer` component of train/components.json.

Keys (defaults in configs/train/default.yaml, per-method values in configs/protocol/method/):
`optim` (a transformers OptimizerNames value), `adam_betas` [beta1, beta2], `weight_decay`,
`lr_scheduler` (a transformers SchedulerType value), `lr_scheduler_kwargs` (e.g.
{min_lr_rate: 0.1} for `cosine_with_min_lr`), `warmup_ratio` (share of the optimizer steps
with a linear warmup; transformers rounds it up: ceil(steps x ratio), as OpenRLHF does),
`loss_type` (TRL's loss aggregation) and `entropy_coef` (TRL's entropy bonus). The component
also records `train.kl_bias_correction` (TRL 1.16's importance-weighted KL; off, as in every
original), `train.loss_chunks` (training/losses.py), `train.mask_truncated_completions` and, for
vLLM rollouts, the importance-sampling correction (`train.vllm.importance_sampling_*`), which
grpo_args passes to TRL itself.

bitsandbytes' 8-bit AdamW (the CorVer and KnowRL releases' `adamw_8bit`) needs CUDA and the
`bitsandbytes` package (pinned in the `gpu` extra: `pip install -e ".[gpu]"`). Without either the
run trains with torch AdamW instead (same betas,
weight decay and schedule, 32-bit state), says so in one log line and records the optimizer
component as a stand-in, so tables mark the row.
"""
from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigError

log = logging.getLogger(__name__)

# transformers OptimizerNames backed by bitsandbytes' 8-bit AdamW; the fallback keeps AdamW.
EIGHT_BIT_ADAMW = ("adamw_8bit", "adamw_bnb_8bit", "paged_adamw_8bit")
FALLBACK = "adamw_torch"
LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")  # TRL's clipped-surrogate aggregations the engine supports


@dataclass(frozen=True)
class OptimizerChoice:
    """What was asked for, what trains, and why they differ (None when they do not)."""

    requested: str
    used: str
    reason: str | None = None

    @property
    def stand_in(self) -> bool:
        return self.used != self.requested


def eight_bit_available() -> tuple[bool, str | None]:
    """(available, why not) for bitsandbytes' 8-bit optimizers on this machine."""
    import torch

    if not torch.cuda.is_available():
        return False, "no CUDA device"
    if importlib.util.find_spec("bitsandbytes") is None:
        return False, "bitsandbytes is not installed (pip install -e \".[gpu]\" brings the pinned one)"
    return True, None


def choose_optimizer(requested: str) -> OptimizerChoice:
    """The optimizer that will train for `train.optim = requested` on this machine."""
    if requested in EIGHT_BIT_ADAMW:
        available, why = eight_bit_available()
        if not available:
            return OptimizerChoice(requested, FALLBACK, why)
    return OptimizerChoice(requested, requested)


def _schedulers() -> set[str]:
    from transformers.trainer_utils import SchedulerType

    return {s.value for s in SchedulerType}


def _optimizers() -> set[str]:
    from transformers.training_args import OptimizerNames

    return {o.value for o in OptimizerNames}


def _betas(train_cfg: Any) -> tuple[float, float]:
    betas = train_cfg.get("adam_betas")
    try:
        beta1, beta2 = (float(b) for b in betas)
    except (TypeError, ValueError):
        raise ConfigError(f"train.adam_betas={betas!r}: give two numbers, e.g. [0.9, 0.999]") from None
    if not (0.0 <= beta1 < 1.0 and 0.0 <= beta2 < 1.0):
        raise ConfigError(f"train.adam_betas=[{beta1}, {beta2}]: both must be in [0, 1)")
    return beta1, beta2


def _scheduler_kwargs(train_cfg: Any, scheduler: str) -> dict[str, Any]:
    from ..core.config_values import as_container

    kwargs = as_container(train_cfg.get("lr_scheduler_kwargs")) or {}
    if not isinstance(kwargs, dict):
        raise ConfigError(f"train.lr_scheduler_kwargs={kwargs!r}: give a mapping, e.g. {{min_lr_rate: 0.1}}")
    needs_floor = scheduler in ("cosine_with_min_lr", "cosine_warmup_with_min_lr")
    if needs_floor and not {"min_lr", "min_lr_rate"} & set(kwargs):
        raise ConfigError(f"train.lr_scheduler={scheduler} needs train.lr_scheduler_kwargs.min_lr_rate (a share of "
                          f"the peak LR, e.g. 0.1) or min_lr")
    return kwargs


def announce_fallback(train_cfg: Any) -> OptimizerChoice:
    """The one log line of a run whose 8-bit optimizer falls back (the engine calls it once)."""
    choice = choose_optimizer(str(train_cfg.get("optim")))
    if choice.stand_in:
        log.warning("train.optim=%s needs CUDA and bitsandbytes (%s): training with torch AdamW (%s) instead, "
                    "recorded as a stand-in in train/components.json", choice.requested, choice.reason, choice.used)
    return choice


def optimizer_args(train_cfg: Any) -> dict[str, Any]:
    """TrainingArguments / GRPOConfig fields for the optimizer, schedule and loss aggregation."""
    requested = str(train_cfg.get("optim"))
    if requested not in _optimizers():
        raise ConfigError(f"train.optim={requested!r} is not a transformers optimizer; e.g. adamw_8bit, adamw_torch, "
                          f"adamw_torch_fused")
    scheduler = str(train_cfg.get("lr_scheduler"))
    if scheduler not in _schedulers():
        raise ConfigError(f"train.lr_scheduler={scheduler!r} is not a transformers scheduler; valid: "
                          f"{', '.join(sorted(_schedulers()))}")
    warmup = float(train_cfg.warmup_ratio)  # the composed train node (TrainSettings checked it)
    if not 0.0 <= warmup < 1.0:
        raise ConfigError(f"train.warmup_ratio={warmup}: give the warmup share of the optimizer steps, in [0, 1)")
    loss_type = str(train_cfg.get("loss_type"))
    if loss_type not in LOSS_TYPES:
        raise ConfigError(f"train.loss_type={loss_type!r}: use one of {', '.join(LOSS_TYPES)}")
    beta1, beta2 = _betas(train_cfg)
    choice = choose_optimizer(requested)
    return {
        "optim": choice.used,
        "adam_beta1": beta1,
        "adam_beta2": beta2,
        "weight_decay": float(train_cfg.weight_decay),
        "lr_scheduler_type": scheduler,
        "lr_scheduler_kwargs": _scheduler_kwargs(train_cfg, scheduler),
        # transformers 5 reads a float below 1 as a ratio: ceil(max_steps x ratio) warmup steps.
        "warmup_steps": warmup,
        "loss_type": loss_type,
        "entropy_coef": float(train_cfg.entropy_coef),
    }


def optimizer_component(train_cfg: Any) -> dict[str, Any]:
    """train/components.json's `optimizer` entry: the update's settings, a stand-in on fallback."""
    from ..core.config_values import as_container

    args = optimizer_args(train_cfg)
    choice = choose_optimizer(str(train_cfg.get("optim")))
    eight_bit = choice.used in EIGHT_BIT_ADAMW
    entry = {
        "kind": "optimizer", "backend": "bitsandbytes" if eight_bit else "torch", "model": None,
        "revision": _bitsandbytes_version() if eight_bit else None, "stand_in": choice.stand_in,
        "label": f"{choice.used}" + (f" (for {choice.requested})" if choice.stand_in else ""),
        "optim": choice.requested, "optim_used": choice.used,
        "adam_betas": [args["adam_beta1"], args["adam_beta2"]], "weight_decay": args["weight_decay"],
        "lr_scheduler": args["lr_scheduler_type"], "lr_scheduler_kwargs": as_container(args["lr_scheduler_kwargs"]),
        "warmup_ratio": args["warmup_steps"], "loss_type": args["loss_type"], "entropy_coef": args["entropy_coef"],
        "kl_bias_correction": bool(train_cfg.kl_bias_correction),
        # losses.py and TRL's truncation mask: what the loss trains on besides the aggregation
        "loss_chunks": train_cfg.get("loss_chunks"),
        "mask_truncated_completions": bool(train_cfg.get("mask_truncated_completions")),
        # vLLM rollouts only: TRL's correction of the vLLM / trainer log-prob mismatch (vllm_settings.py)
        "vllm_importance_sampling": _importance_sampling(train_cfg),
    }
    if choice.stand_in:
        entry["note"] = (f"torch AdamW (32-bit state) in place of {choice.requested} (bitsandbytes 8-bit AdamW): "
                         f"{choice.reason}")
    return entry


def _importance_sampling(train_cfg: Any) -> dict[str, Any] | None:
    """None for HF rollouts (nothing to correct), else the correction the loss applies."""
    if not train_cfg.get("use_vllm"):
        return None
    node = train_cfg.vllm
    if not node.importance_sampling_correction:
        return {"correction": False}
    return {"correction": True, "mode": str(node.importance_sampling_mode),
            "clip_max": node.importance_sampling_clip_max, "clip_min": node.importance_sampling_clip_min}


def _bitsandbytes_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bitsandbytes")
    except PackageNotFoundError:
        return None
