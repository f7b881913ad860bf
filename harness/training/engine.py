"""Train a LoRA adapter with a GRPO-family method: config -> TRL -> adapter on disk.

Reads like a recipe, top to bottom: batch geometry, dataset, LoRA, TRL config, reward (and
its components, train/components.json), trainer, resume, train, save. Every method gets the
same pool order, LoRA settings, seed, generation limits and timer; only the reward differs.
"""
from __future__ import annotations

import contextlib
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.config_values import config_hash
from ..core.errors import ConfigError
from ..core.method import Method, RunContext
from ..core.prompts import chat_messages, format_prompt, method_prompt, prompt_hash, response_prefix, system_prompt
from . import format_warmup, model_card
from .args import clip_args, grpo_args, lora_config
from .components import read_components, write_components
from .distributed import barrier, is_main, refuse_deepspeed

log = logging.getLogger(__name__)

ADAPTER_DIR = "adapter"
CRITIC_DIR = "critic"  # PPO: the trained critic (critic.safetensors), beside the adapter
DONE_MARKER = "TRAINING_DONE"


def _text_prompt(tokenizer, question: str, model_cfg: Any, system: str | None) -> str:
    """The formatted prompt as TRL will tokenise it (TRL adds special tokens itself)."""
    text = format_prompt(tokenizer, question, model_cfg, system=system)
    bos = tokenizer.bos_token
    adds_bos = bos is not None and tokenizer("x")["input_ids"][:1] == [tokenizer.bos_token_id]
    return text[len(bos):] if adds_bos and text.startswith(bos) else text


def build_dataset(rows: list[dict], model_cfg: Any, *, tokenizer: Any = None, system: str | None = None):
    """A datasets.Dataset of prompts plus the gold columns the reward reads.

    Prompts are conversational (TRL applies the chat template, as evaluation does) unless the
    model has a response prefix, which only a formatted text prompt can carry.
    """
    from datasets import Dataset

    if response_prefix(model_cfg):
        if tokenizer is None:
            raise ValueError("build_dataset needs the tokenizer when the model has a response_prefix")
        prompt = lambda q: _text_prompt(tokenizer, q, model_cfg, system)  # noqa: E731
    else:
        prompt = lambda q: chat_messages(q, model_cfg, system=system)  # noqa: E731
    return Dataset.from_list([
        {"prompt": prompt(r["question"]), "id": r["id"], "question": r["question"], "answers": list(r["answers"]),
         "title": r.get("title", "")}
        for r in rows
    ])


def prompt_token_count(tokenizer, prompt: Any, chat_kwargs: dict | None = None) -> int:
    """Tokens of one dataset prompt as TRL feeds it to the policy: a text prompt with the
    tokenizer's special tokens, a chat prompt through the chat template."""
    if isinstance(prompt, str):
        return len(tokenizer(prompt)["input_ids"])
    encoded = tokenizer.apply_chat_template(list(prompt), add_generation_prompt=True, tokenize=True,
                                            **(chat_kwargs or {}))
    # transformers 5 returns a BatchEncoding here (len() of it is its 2 keys), older ones a list.
    ids = encoded["input_ids"] if hasattr(encoded, "keys") else encoded
    return len(ids)


def _check_max_prompt_length(tokenizer, dataset, limit: int, chat_kwargs: dict | None = None) -> None:
    longest = max(prompt_token_count(tokenizer, p, chat_kwargs) for p in dataset["prompt"])
    if longest > limit:
        raise ConfigError(f"a formatted prompt has {longest} tokens, over train.max_prompt_length={limit}; "
                          f"raise it or shorten the questions")


def method_system(method: Method) -> str | None:
    """The system prompt of `method`'s rollouts: None (the shared prompt) unless the method has a
    prompt addition (Method.prompt_addition, interface 5), then the shared prompt with it (never
    the anti-loop line: that is an evaluation option)."""
    return system_prompt(False, method.prompt_addition) if method.prompt_addition else None


def prompt_component(method: Method) -> dict[str, dict[str, Any]]:
    """{"prompt": entry} recording a method's prompt addition (text, hash, the system prompt's
    hash), {} without one, so other methods' components.json keep their bytes."""
    facts = method_prompt(method.prompt_addition, method.name)
    if facts is None:
        return {}
    return {"prompt": {"kind": "prompt", "backend": None, "model": None, "revision": None, "stand_in": False,
                       "label": "method prompt", **facts, "system_hash": prompt_hash(method_system(method)),
                       "text": method.prompt_addition}}


@dataclass
class TrainResult:
    """The saved adapter, and the trained model still in memory (None when training had already
    finished in an earlier attempt), so evaluation need not load the weights again; and the
    reward's components (None for a finished run from before they were recorded)."""

    adapter_dir: Path
    model: Any = None
    tokenizer: Any = None
    components: dict | None = None  # Method.components(reward), as train/components.json holds it


def train(cfg: Any, method: Method, identity: Any, run_dir: Path, rows: list[dict], timer: Any = None
          ) -> TrainResult:
    """Train (or resume) and return the saved LoRA adapter (and the trained model).

    With a timer, its totals are written to <run_dir>/timings.json at every checkpoint, so a
    killed run that resumes keeps the time already spent. Cleanups the method registered with
    `ctx.on_close` run when training ends, on error too.
    """
    from ..services import models

    out = Path(run_dir) / "train"
    adapter_dir = out / ADAPTER_DIR
    if (out / DONE_MARKER).is_file() and (adapter_dir / "adapter_config.json").is_file():
        log.info("training already finished; reusing %s", adapter_dir)
        return TrainResult(adapter_dir, components=read_components(out))
    if method.algorithm not in ("grpo", "ppo"):
        raise ConfigError(f"method '{method.name}' uses algorithm '{method.algorithm}', which this engine does "
                          f"not train (grpo or ppo)")
    refuse_deepspeed(method)  # PPO and needs_policy methods: before the model and TRL's trainer exist
    phase = timer.phase if timer is not None else (lambda _name: contextlib.nullcontext())
    with phase("init"):
        tokenizer = models.load_tokenizer(identity, cfg.model)
        dataset = build_dataset(rows, cfg.model, tokenizer=tokenizer, system=method_system(method))
        thinking = cfg.model.get("enable_thinking")
        _check_max_prompt_length(tokenizer, dataset, int(cfg.train.max_prompt_length),
                                 {"enable_thinking": bool(thinking)} if thinking is not None else None)
    ctx = RunContext(config=cfg, tokenizer=tokenizer, pool=rows, run_dir=Path(run_dir),
                     logger=logging.getLogger(f"factrl.methods.{method.name}"))
    card = model_card.card_text(method=method, identity=identity, steps=int(cfg.train.steps),
                                config_hash=config_hash(cfg), run_dir=Path(run_dir))
    try:
        with phase("init"):
            # train.ppo.critic=full: the critic is a second, separately trained copy of the model.
            full_critic = method.algorithm == "ppo" and str(cfg.train.ppo.critic) == "full"
            if full_critic:
                from .memory_plan import check_full_critic

                check_full_critic(cfg)  # on a GPU: refused when the planned peak exceeds it (an estimate)
            # The reward before the weights: a reward-side bad input (a judge that does not answer,
            # a store that does not open) is its one-line error without waiting for a model load.
            reward = ctx.build_reward(method)  # its close() runs with the other cleanups
            if reward is None:
                raise ConfigError(f"method '{method.name}' returned no reward function but declares algorithm "
                                  f"'{method.algorithm}'")
            model = models.load_model(identity, cfg.model)
            if bool(cfg.train.use_vllm) and not getattr(model, "name_or_path", ""):
                # TRL's vLLM engine loads the weights from model.name_or_path, which from_config leaves empty.
                raise ConfigError("train.use_vllm=true: vLLM loads the model from disk, and this random model "
                                  "(model.source=random) has no folder; `harness run` saves it first "
                                  "(disk_models.save_random), or pass a saved copy as model.path=DIR")
            critic_model = models.load_model(identity, cfg.model) if full_critic else None
        result = _train_with_reward(cfg, method, ctx, model, reward, dataset, out, adapter_dir, phase, timer,
                                    critic_model, card=card)
    except BaseException:
        ctx.close(raise_errors=False)  # the training error is the one to report
        raise
    ctx.close()  # the method's cleanups (judge server, stats, stores) before evaluation starts
    _release_accelerator_memory()
    return result


def _train_with_reward(cfg: Any, method: Method, ctx: RunContext, model: Any, reward: Any, dataset: Any, out: Path,
                       adapter_dir: Path, phase: Any, timer: Any, critic_model: Any = None,
                       card: str | None = None) -> TrainResult:
    """Trainer, resume, train, save with the built reward: the part of `train` whose cleanups ctx holds."""
    from .advantages import advantage_std_floor
    from .checkpoints import resume_point
    from .callbacks import JsonlLogCallback, KillSwitchCallback, TimingsCallback
    from .grpo import TokenGRPOTrainer, checkpoint_step, truncate_jsonl
    from .optim import announce_fallback
    from .sampling import sampling_settings
    from .settings import LogprobSettings, RolloutSettings

    run_dir, tokenizer = ctx.run_dir, ctx.tokenizer
    with phase("init"):
        if is_main():
            announce_fallback(cfg.train)  # one line per run when the 8-bit optimizer falls back
        common = dict(
            model=model, train_dataset=dataset, processing_class=tokenizer, model_card=card,
            peft_config=lora_config(cfg.lora), method_reward=reward, reward_name=method.name, method=method,
            timer=timer,
            records_path=out / "reward_records.jsonl", std_floor=advantage_std_floor(cfg.train),
            adv_epsilon=float(cfg.train.advantage_epsilon),
            presence_penalty=sampling_settings(cfg.train)["presence_penalty"],
            rollout=RolloutSettings.from_mapping(cfg.train.rollout), logprob=LogprobSettings.from_mapping(cfg.train.logprob),
            callbacks=[JsonlLogCallback(out / "log.jsonl"), KillSwitchCallback(),
                       TimingsCallback(timer, Path(run_dir) / "timings.json")],
        )
        if method.algorithm == "ppo":
            from .args import ppo_args
            from .ppo import PPOSettings, PPOTrainer

            settings = PPOSettings.from_config(cfg.train)
            trainer = PPOTrainer(args=ppo_args(cfg, out, settings), ppo=settings, lora_config=lora_config(cfg.lora),
                                 critic_model=critic_model, **common)
        else:
            trainer = TokenGRPOTrainer(args=grpo_args(cfg, out), **common)
    engine_parts = {**engine_components(cfg.train, method.algorithm), **prompt_component(method)}
    plan = format_warmup.planned(method, cfg.model)
    if plan is not None:  # before the first step and the initial snapshot: RL's movement is its own
        barrier()  # every process sees the same earlier attempt's files
        with phase("warmup"):
            engine_parts[format_warmup.COMPONENT] = format_warmup.run_or_load(
                plan, trainer.accelerator.unwrap_model(trainer.model), tokenizer, ctx.pool, model_cfg=cfg.model,
                system=method_system(method), seed=int(cfg.train.seed), out=out, write=is_main(),
                max_completion_length=int(cfg.train.max_completion_length))
        barrier()
    # Rank 0 writes the run directory; the others build the same reward and train.
    components = write_components(out, method, reward, engine=engine_parts) if is_main() else None
    # The newest complete checkpoint; rank 0 removes newer incomplete ones (training/checkpoints.py).
    checkpoint = resume_point(out, trainer.checkpoint_parts(), clean=False)
    barrier()
    if is_main():
        checkpoint = resume_point(out, trainer.checkpoint_parts())
    if checkpoint:
        log.info("resuming from %s", checkpoint)
    # Steps after the checkpoint (or all, with none) are trained again: forget their log lines.
    resume_step = checkpoint_step(checkpoint)
    for name in ("log.jsonl", "reward_records.jsonl", "rollouts.jsonl") if is_main() else ():
        dropped = truncate_jsonl(out / name, resume_step)
        if dropped:
            log.info("train/%s: dropped %d line(s) after step %d (retrained on resume)", name, dropped, resume_step)
    barrier()  # no process starts before the logs are cut back
    steps_per_epoch = math.ceil(len(dataset) / int(cfg.train.questions_per_step))
    if int(cfg.train.steps) > steps_per_epoch:
        log.info("train.steps=%s exceeds one pass over %d questions; the pool is reused (reshuffled) each epoch",
                 cfg.train.steps, len(dataset))
    initial = None if _zero3(trainer) else _initial_adapter(trainer, out)  # sharded weights: not readable here
    with phase("update"):
        trainer.train(resume_from_checkpoint=checkpoint)
    if initial is not None:
        _check_adapter_moved(cfg, trainer, initial, out)
    with phase("save"):
        if method.algorithm == "ppo":
            # The critic beside the adapter (train/critic/), then off the policy model, so the
            # adapter directory and the in-memory model that evaluation uses hold the policy only.
            if is_main():
                trainer.save_critic(out / CRITIC_DIR)
            trainer.critic.remove()
        trainer.save_model(str(adapter_dir))  # every process: Trainer writes on rank 0 (ZeRO-3 gathers)
        barrier()
        if is_main():
            if card is not None:
                model_card.write_card(adapter_dir, card)  # over PEFT's empty template
            (out / DONE_MARKER).write_text("ok\n")
    model = trainer.model
    if _zero3(trainer):  # sharded weights: evaluation loads the saved adapter instead
        model = None
    del trainer  # frees the optimizer state (and a colocated vLLM engine) before evaluation
    return TrainResult(adapter_dir, model, tokenizer, components)


def engine_components(train_cfg: Any, algorithm: str) -> dict[str, dict[str, Any]]:
    """The engine's entries of train/components.json: `optimizer` (every algorithm) and
    `advantages` (GRPO: the group scaling, its std floor and eps; PPO uses GAE instead)."""
    from .advantages import advantages_component
    from .optim import optimizer_component

    parts = {"optimizer": optimizer_component(train_cfg), "fast_path": speed_component(train_cfg)}
    if algorithm == "grpo":
        parts["advantages"] = advantages_component(train_cfg)
        clip = clip_args(train_cfg)  # the ratio clip changes every update: recorded with the optimizer's settings
        parts["optimizer"].update(epsilon_low=clip["epsilon"], epsilon_high=clip["epsilon_high"])
    return parts


def speed_component(train_cfg: Any) -> dict[str, Any]:
    """train/components.json's `fast_path` entry: the speed settings of the HF path (train.rollout,
    train.logprob), each equal to TRL's stock path up to float rounding (so never a stand-in)."""
    from ..core.config_values import as_container

    import torch

    from .settings import RolloutSettings

    rollout, logprob = as_container(train_cfg.rollout), as_container(train_cfg.logprob)
    # What `auto` resolves to on the device this process generates on (the HF path; vLLM ignores it).
    resolved = RolloutSettings.from_mapping(rollout).resolved("cuda" if torch.cuda.is_available() else "cpu")
    return {"kind": "fast_path", "backend": "harness", "model": None, "revision": None, "stand_in": False,
            "label": "HF rollouts: merged LoRA " + str(rollout["merge_lora"]) + ", static cache "
                     + str(rollout["static_cache"]) + ", compile " + str(rollout["compile"]) + ", log-probs: shared "
                     "prefix " + str(logprob["shared_prefix"]) + ", head " + str(logprob["head"]),
            "rollout": rollout, "rollout_resolved": resolved, "logprob": logprob}


def _initial_adapter(trainer: Any, out: Path) -> dict:
    """The trainable weights before any update (adapter_delta.py); the first attempt stores their
    hash, so a resumed run says whether it rebuilt the same initial values from the seed."""
    from ..core.rundir import read_json, write_json
    from . import adapter_delta

    initial = adapter_delta.snapshot(trainer.model)
    marker = out / adapter_delta.INIT_FILENAME
    digest = adapter_delta.fingerprint(initial)
    if is_main():
        if not marker.is_file():
            write_json(marker, {"initial_sha256": digest})
        elif read_json(marker).get("initial_sha256") != digest:
            log.warning("the resumed run rebuilt other initial LoRA values than the first attempt's (%s): "
                        "train/adapter_delta.json compares with this attempt's", marker)
    return initial


def _check_adapter_moved(cfg: Any, trainer: Any, initial: dict, out: Path) -> None:
    """Write train/adapter_delta.json; fail the run (one line) when no trainable tensor moved,
    unless train.require_update is false."""
    from ..core.rundir import write_json
    from . import adapter_delta

    document = adapter_delta.delta(initial, adapter_delta.snapshot(trainer.model))
    path = out / adapter_delta.FILENAME
    if is_main():
        write_json(path, document)
    log.info("adapter moved: %d of %d trainable tensors changed, relative change %.3g", document["changed"],
             document["tensors"], document["relative_change"])
    if bool(cfg.train.require_update):
        adapter_delta.check(document, path)


def _zero3(trainer: Any) -> bool:
    plugin = getattr(trainer.accelerator.state, "deepspeed_plugin", None)
    return plugin is not None and int(getattr(plugin, "zero_stage", 0) or 0) == 3


def _release_accelerator_memory() -> None:
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()

