"""TRL's GRPOConfig and PEFT's LoraConfig from the harness config, and the batch geometry.

The arguments the trainers are built with, apart from the recipe (training/engine.py) that
uses them, so the PPO path (training/ppo.py) and the memory planner (harness/training/memory_plan.py)
read the geometry without importing the engine. Every ConfigError names the key to change.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import ConfigError
from .distributed import timeout_s, world_size
from .settings import PPOSettings


def batch_geometry(train_cfg: Any, processes: int | None = None) -> dict[str, int]:
    """TRL batch sizes for Q questions x C completions per optimizer step.

    With W processes (default: the launcher's WORLD_SIZE) and micro_batch_size m (default
    Q*C/W): per-device batch m, gradient accumulation Q*C/(W*m), and one generation of Q*C
    completions (all processes together) per optimizer step, so the global batch, and with it
    the advantages, is the one-process batch.
    """
    q, c = int(train_cfg.questions_per_step), int(train_cfg.completions_per_question)
    if q < 1 or c < 2:
        raise ConfigError(f"train.questions_per_step={q} and train.completions_per_question={c}: GRPO needs "
                          f"at least 1 question and 2 completions per question")
    total = q * c
    processes = world_size() if processes is None else int(processes)
    if total % processes:
        raise ConfigError(f"train.questions_per_step x train.completions_per_question = {total} completions do not "
                          f"split over {processes} processes; change train.questions_per_step or the process count")
    per_process = total // processes
    micro = int(train_cfg.get("micro_batch_size") or per_process)
    if per_process % micro:
        where = f"completions_per_question = {total}" if processes == 1 else \
            f"completions_per_question / {processes} processes = {per_process}"
        raise ConfigError(f"train.micro_batch_size={micro} must divide questions_per_step x {where}")
    return {"per_device_train_batch_size": micro, "gradient_accumulation_steps": per_process // micro,
            "generation_batch_size": total, "num_generations": c}


def _use_bf16(train_cfg: Any) -> bool:
    import torch

    setting = train_cfg.bf16
    if setting == "auto":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return bool(setting)


def grpo_args(cfg: Any, output_dir: Path, **overrides: Any):
    """TRL GRPOConfig from the harness config (train, model, seed); `overrides` replace fields
    (the PPO path sets its own geometry, steps, beta and clip range, see training/ppo.py)."""
    import torch

    from .losses import HarnessGRPOConfig
    from .optim import optimizer_args
    from .sampling import sampling_args
    from .vllm_settings import vllm_args

    train = cfg.train
    geometry = batch_geometry(train) if "num_generations" not in overrides else {}
    if str(train.scale_rewards) not in ("group", "none"):
        raise ConfigError(f"train.scale_rewards={train.scale_rewards!r}: token-level advantages support "
                          f"'group' (docs/PROTOCOL.md §3) or 'none'")
    chat_kwargs = {}
    if cfg.model.get("enable_thinking") is not None:
        chat_kwargs["enable_thinking"] = bool(cfg.model.enable_thinking)
    settings = dict(
        output_dir=str(output_dir),
        max_steps=int(train.steps),
        **geometry,
        learning_rate=float(train.learning_rate),
        beta=float(train.beta),
        temperature=float(train.temperature),
        top_p=float(train.top_p),
        **sampling_args(train),  # top_k, repetition_penalty (+ the presence penalty for vLLM)
        max_completion_length=int(train.max_completion_length),
        **optimizer_args(train),  # optim, betas, weight decay, LR schedule, warmup, loss_type, entropy_coef
        **clip_args(train),  # epsilon / epsilon_high (the PPO path overrides epsilon with ppo.cliprange)
        scale_rewards=str(train.scale_rewards),
        seed=int(train.seed),
        data_seed=int(train.seed),
        save_strategy="steps",
        save_steps=int(train.save_steps),
        logging_steps=int(train.logging_steps),
        report_to=[],
        ddp_timeout=int(timeout_s()),  # the harness's process group has this one (distributed.configure)
        bf16=_use_bf16(train),
        use_cpu=not torch.cuda.is_available(),
        **vllm_args(train),
        use_bias_correction_kl=bool(train.kl_bias_correction),  # explicit, not TRL's default
        mask_truncated_completions=bool(train.mask_truncated_completions),
        loss_chunks=None if train.loss_chunks is None else int(train.loss_chunks),  # training/losses.py
        gradient_checkpointing=bool(train.gradient_checkpointing),
        chat_template_kwargs=chat_kwargs or None,
        remove_unused_columns=False,
        disable_tqdm=False,
        log_completions=False,
        shuffle_dataset=True,
    )
    settings.update(overrides)
    return HarnessGRPOConfig(**settings)


def lora_config(lora_cfg: Any):
    from peft import LoraConfig

    return LoraConfig(
        r=int(lora_cfg.r), lora_alpha=int(lora_cfg.alpha), lora_dropout=float(lora_cfg.dropout),
        bias=str(lora_cfg.bias), target_modules=list(lora_cfg.target_modules), task_type="CAUSAL_LM",
    )


def clip_args(train: Any) -> dict[str, Any]:
    """TRL's ratio clip from `train.epsilon_low` / `train.epsilon_high` (null: symmetric)."""
    low, high = float(train.epsilon_low), train.epsilon_high
    if low <= 0 or (high is not None and float(high) <= 0):
        raise ConfigError(f"train.epsilon_low={low}, train.epsilon_high={high}: the ratio clip bounds must be > 0 "
                          f"(TRL and the released trainers use 0.2; null epsilon_high = epsilon_low)")
    return {"epsilon": low, "epsilon_high": None if high is None else float(high)}


def ppo_geometry(train_cfg: Any, settings: PPOSettings, processes: int | None = None) -> dict[str, int]:
    """TRL batch sizes for one rollout of Q x C completions split into `minibatches` optimizer steps.

    Per minibatch Q*C/M completions, in micro-batches of train.micro_batch_size (default: the
    whole minibatch); TRL's steps_per_generation then comes out as Q*C / micro. C may be 1
    (FoRAG adjusted): PPO needs no group. With W processes (default: the launcher's) each
    minibatch is split over them: micro defaults to Q*C/(M*W), accumulation Q*C/(M*W*micro).
    """
    q, c = int(train_cfg.questions_per_step), int(train_cfg.completions_per_question)
    if q < 1 or c < 1:
        raise ConfigError(f"train.questions_per_step={q} and train.completions_per_question={c} must be >= 1")
    total, minibatches = q * c, int(settings.minibatches)
    if total % minibatches:
        raise ConfigError(f"train.ppo.minibatches={minibatches} must divide questions_per_step x "
                          f"completions_per_question = {total}")
    per_minibatch = total // minibatches
    processes = world_size() if processes is None else int(processes)
    if per_minibatch % processes:
        raise ConfigError(f"the PPO minibatch of {per_minibatch} completions (Q x C / train.ppo.minibatches) does not "
                          f"split over {processes} processes; change train.questions_per_step or the process count")
    per_process = per_minibatch // processes
    micro = int(train_cfg.get("micro_batch_size") or per_process)
    if per_process % micro:
        raise ConfigError(f"train.micro_batch_size={micro} must divide the per-process PPO minibatch of {per_process} "
                          f"completions (Q x C / train.ppo.minibatches / {processes} processes)")
    return {"per_device_train_batch_size": micro, "gradient_accumulation_steps": per_process // micro,
            "generation_batch_size": total, "num_generations": c}


def ppo_args(cfg: Any, output_dir: Path, settings: PPOSettings):
    """GRPOConfig for PPO: TRL's KL off (it is in the reward), num_iterations = epochs, steps
    and checkpoints counted in rollouts (x epochs x minibatches optimizer steps)."""
    geometry = ppo_geometry(cfg.train, settings)
    per_rollout = int(settings.epochs) * int(settings.minibatches)
    group = geometry["num_generations"]
    if group == 1:
        if geometry["generation_batch_size"] < 2:
            raise ConfigError("train.questions_per_step x train.completions_per_question must be >= 2 for PPO")
        # GRPOConfig insists on >= 2 completions per prompt (a GRPO need, not a PPO one): build it
        # with one group spanning the batch, then set the real C = 1 before the trainer reads it.
        geometry["num_generations"] = geometry["generation_batch_size"]
    args = grpo_args(cfg, output_dir, **geometry, max_steps=int(cfg.train.steps) * per_rollout,
                     save_steps=int(cfg.train.save_steps) * per_rollout, beta=0.0,
                     num_iterations=int(settings.epochs), epsilon=float(settings.cliprange), scale_rewards="none")
    args.num_generations = group
    return args
