"""Token-level GRPO on TRL 1.16's GRPOTrainer.

The only algorithmic change to TRL's GRPO is in `_generate_and_score_completions`: TRL
computes one advantage per completion, shape (B,); we replace it with per-token advantages,
shape (B, T), from the method's per-token returns (harness.training.advantages).
`_compute_loss` accepts both shapes, so the loss, KL term and clipping are TRL's own.

The method's reward reaches TRL as an ordinary reward function (`_TokenReward`): TRL calls it
with every dataset column repeated per completion, so completion b is judged against its own
row (`question`, `answers`, ...) — never the first question's gold. It returns the
per-completion mean return R_bar (what TRL logs as the reward) and keeps the per-token returns
for the override to turn into advantages.

Method hooks: after the group advantages the trainer calls the method's
`shape_advantages(advantages (B, T), output=RewardOutput, mask (B, T), group_size=G)`; the
default is the identity, so a method that does not override it (CorVer) trains on the group
advantages unchanged.

KL reference (interface 4): a method whose `kl_reference_adapter` names one of its adapter
copies gets the KL term against that copy instead of the adapter-disabled base (kl_reference.py).

Policy access (interface 2): for a method with `needs_policy` the trainer builds a
`PolicyHandle` (training/policy.py) after TRL's PEFT wrap, calls `setup_policy`, passes
`policy=` to every reward call (None otherwise), calls `on_checkpoint` and saves the adapter
copies beside each checkpoint, and restores them on resume.

Timing hooks (harness.core.timer phases): rollout = generation and log-prob scoring of the
batch, reward = the method's reward call (nested inside rollout), save = checkpoints;
everything else inside `train()` is charged to update by the caller.
"""
from __future__ import annotations

import contextlib
import json
import logging
import math
from pathlib import Path
from typing import Any

import torch
from trl import GRPOTrainer

from ..core.method import Method, RewardFn, RewardOutput
from .callbacks import ProgressBarCallback
from .distributed import check_whole_groups, global_token_advantages
from .signal_log import install_filter
from .token_reward import _TokenReward

log = logging.getLogger(__name__)

class TokenGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose advantages are per token, shape (B, T), from a Method's reward."""

    def __init__(self, *args, method_reward: RewardFn, reward_name: str, timer: Any = None,
                 records_path: Path | None = None, std_floor: float | None = None, adv_epsilon: float | None = None,
                 method: Method | None = None, presence_penalty: float = 0.0, model_card: str | None = None,
                 rollout: Any = None, logprob: Any = None, **kwargs):
        # The method whose `shape_advantages` hook sees every batch (None: no shaping, as for
        # tests that hand in a bare reward function).
        self._method = method
        self._model_card = model_card  # the harness's train/README.md (model_card.py); None: TRL's
        self._phase = timer.phase if timer is not None else (lambda _name: contextlib.nullcontext())
        self._token_reward = _TokenReward(method_reward, reward_name, self._phase, records_path)
        from .rollout_log import FILENAME

        self._rollouts_path = Path(records_path).parent / FILENAME if records_path is not None else None
        if std_floor is None or adv_epsilon is None:  # train.advantage_std_floor / advantage_epsilon: the YAML's
            from ..core.settings import defaults_from_yaml

            train = defaults_from_yaml("train/default.yaml")
            std_floor = train["advantage_std_floor"] if std_floor is None else std_floor
            adv_epsilon = train["advantage_epsilon"] if adv_epsilon is None else adv_epsilon
        self._std_floor = std_floor
        self._adv_epsilon = adv_epsilon
        self._presence_penalty = float(presence_penalty)  # HF rollouts (vLLM gets it in generation_kwargs)
        # train.rollout / train.logprob (None: the YAML's): speed settings, same numbers up to rounding.
        from .settings import LogprobSettings, RolloutSettings

        self._rollout = rollout if rollout is not None else RolloutSettings.from_mapping({})
        self._logprob = logprob if logprob is not None else LogprobSettings.from_mapping({})
        self.shared_prefix = bool(self._logprob.shared_prefix)
        from ..services.models.merged_linears import MergeReport

        self.merge_report = MergeReport()  # the last HF rollout's merge (what a test or benchmark reads)
        self.generation_log: list[tuple[float, int, int, int]] = []  # per HF generate (_generate_single_turn)
        self.compile_failed: str | None = None  # why train.rollout.compile fell back to eager decoding
        super().__init__(*args, reward_funcs=[self._token_reward], **kwargs)
        install_filter()  # TRL's "All reward functions returned None" -> our counted line per step
        # Data parallel: advantages are computed on the gathered batch (training/distributed.py);
        # a method that needs whole groups per reward call is checked here.
        check_whole_groups(method, self.args.generation_batch_size, self.num_generations,
                           self.accelerator.num_processes)
        from transformers.trainer_callback import PrinterCallback, ProgressCallback

        self.remove_callback(ProgressCallback)
        self.remove_callback(PrinterCallback)
        self.add_callback(ProgressBarCallback(reward_name))
        self._policy = self._setup_policy(method)
        # The KL reference: the base model (TRL's way), or the method's adapter copy (kl_reference.py).
        from .kl_reference import reference_adapter

        self._kl_adapter = reference_adapter(method, self._policy, self.beta)

    def create_model_card(self, *args: Any, **kwargs: Any) -> None:
        """At each checkpoint TRL writes its card ("fine-tuned version of [None]" for a local
        model) into the output folder; the harness writes its own there instead."""
        if self._model_card is None:
            return super().create_model_card(*args, **kwargs)
        if self.is_world_process_zero():
            from .model_card import write_card

            write_card(self.args.output_dir, self._model_card)

    def _generate_and_score_completions(self, inputs):
        """Generate, score and return the batch with `advantages` of shape (B, T).

        In: B dataset rows (each question repeated G times in a row, TRL's RepeatSampler).
        Out: TRL's batch dict; `advantages` (B, T) where T = completion_ids.size(1).
        """
        with self._phase("rollout"), self._kl_reference() as seen:
            output = super()._generate_and_score_completions(inputs)
        if seen is not None:
            from .kl_reference import check_used

            check_used(seen, self._kl_adapter)
        returns, reward_output = self._token_reward.pending, self._token_reward.pending_output
        self._token_reward.pending = self._token_reward.pending_output = None
        self._token_reward.pending_batch = dict(self._token_reward.pending_batch or {}, returns=returns)
        if returns is None:
            raise RuntimeError("the method reward was not called for this batch")
        mode = "train" if self.model.training else "eval"
        group = self.num_generations if mode == "train" else self.num_generations_eval
        width = output["completion_ids"].size(1)
        advantages, stats = global_token_advantages(returns, group, width=width, eps=self._adv_epsilon,
                                                    std_floor=self._std_floor, scale=self.scale_rewards)
        if self._method is not None:
            advantages = self._shape(advantages, reward_output, output["completion_mask"], group)
        output["advantages"] = advantages.to(output["completion_ids"].device)
        self._record_rollouts(advantages, output["completion_mask"], group)
        # After shaping: the metric reports what reaches the loss.
        max_abs = float(advantages.abs().max()) if advantages.numel() else 0.0
        self._metrics[mode]["advantages/max_abs"].append(max_abs)
        self._metrics[mode]["advantages/mean_return"].append(stats.mean_return)
        self._metrics[mode]["advantages/frac_zero_std_groups"].append(stats.frac_zero_std)
        return output

    def _record_rollouts(self, advantages: torch.Tensor, mask: torch.Tensor, group: int) -> None:
        """Append this batch's completions to train/rollouts.jsonl (training/rollout_log.py).
        In: advantages and mask (B, T) as they reach the loss. Collective under several processes."""
        batch, self._token_reward.pending_batch = self._token_reward.pending_batch, None
        if self._rollouts_path is None or not batch or "ids" not in batch:
            return
        from .rollout_log import append, rollout_lines

        eos = getattr(self, "eos_token_ids", None) or [self.processing_class.eos_token_id]
        lines = rollout_lines(batch, advantages, mask, step=int(self.state.global_step) + 1, group=group,
                              max_tokens=int(self.max_completion_length), eos_ids=set(eos))
        append(self._rollouts_path, lines)

    def _generate_single_turn(self, prompt_ids, *args, **kwargs):
        """TRL's generation. HF rollouts: with train.presence_penalty as a logits processor
        (training/sampling.py; vLLM gets it natively through generation_kwargs), the adapter merged
        into the weights (train.rollout, models/merged_linears.py) unless the weights are sharded
        (DeepSpeed, FSDP), and a static KV cache with the decode step compiled (training/fast_generate.py).
        In: the prompts' token ids, one list per row. Each call appends (seconds, rows, padded prompt
        width, longest completion) to `self.generation_log` (benchmarks/gpu_step.py's tokens/s)."""
        if self.use_vllm or self.use_transformers_continuous_batching:
            return super()._generate_single_turn(prompt_ids, *args, **kwargs)
        import time

        model = self.accelerator.unwrap_model(self.model_wrapped)
        device = self.accelerator.device.type
        resolved = self._rollout.resolved(device)
        if self.compile_failed:  # a compile that failed once runs eagerly for the rest of the run
            resolved["compile"] = False
        with contextlib.ExitStack() as stack:
            if self._presence_penalty:
                from .sampling import presence_penalty_generate

                stack.enter_context(presence_penalty_generate(model, self._presence_penalty))
            if resolved["shared_prefill"]:  # each group's prompt prefilled once (training/shared_prefix.py)
                from .shared_prefix import prefilled_generate

                stack.enter_context(prefilled_generate(model))
            if resolved["merge_lora"] and not (self.is_deepspeed_enabled or self.is_fsdp_enabled):
                from ..services.models.merged_linears import MergeReport, merged_linears

                self.merge_report = MergeReport()
                pack = resolved["prepack"]
                stack.enter_context(merged_linears(model, rows=len(prompt_ids), prepack=pack, inplace=not pack,
                                                   report=self.merge_report))
            if resolved["grouped_sdpa"]:
                from ..services.models.grouped_attention import grouped_query_sdpa

                stack.enter_context(grouped_query_sdpa())
            if resolved["static_cache"]:
                from .fast_generate import static_generation

                stack.enter_context(static_generation(self, resolved, device))
            start = time.perf_counter()
            try:
                completion_ids, logprobs = super()._generate_single_turn(prompt_ids, *args, **kwargs)
            except Exception as err:  # noqa: BLE001 - torch.compile's failures have no common base
                if not resolved["compile"] or isinstance(err, torch.OutOfMemoryError):
                    raise
                self.compile_failed = f"{type(err).__name__}: {err}".splitlines()[0][:300]
        if resolved["compile"] and self.compile_failed:  # the weights are restored: generate again, eagerly
            log.warning("train.rollout.compile: the compiled decode step failed (%s); this run's rollouts decode "
                        "eagerly on the static cache from here on", self.compile_failed)
            return self._generate_single_turn(prompt_ids, *args, **kwargs)
        longest = max((len(c) for c in completion_ids), default=0)
        width = max((len(p) for p in prompt_ids), default=0)
        if resolved["static_cache"]:
            from .fast_generate import round_up

            width = round_up(width, resolved["prompt_bucket"])
        self.generation_log.append((time.perf_counter() - start, len(completion_ids), width, longest))
        return completion_ids, logprobs

    # -- log-probs (training/logprobs.py) ----------------------------------------------------
    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False, compute_aux_loss=False, **extra):
        """Per-token log-probs (B, T) and entropies (B, T) or None of the last T = logits_to_keep
        positions, for every pass of a step (old policy, reference, the loss's forward).

        train.logprob: the plain LM head on the completion positions (CPU) and the shared
        prompt prefix (one process, no gradient checkpointing): TRL's numbers up to float
        rounding. TRL's own pass for multimodal inputs, MoE aux losses, or where neither applies.
        """
        plain = super()._get_per_token_logps_and_entropies
        if compute_aux_loss or any(v is not None for v in extra.values()):
            return plain(model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                         compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **extra)
        from .logprobs import choose_head, completion_logps
        from .shared_prefix import checkpointing

        unwrapped = self.accelerator.unwrap_model(model)
        # Several processes: each DDP forward is a collective, and a rank whose rows share no
        # prompt would call it fewer times than the others.
        share = (self.shared_prefix and self.accelerator.num_processes == 1 and not checkpointing(unwrapped))
        vocab = int(unwrapped.get_output_embeddings().weight.size(0))
        step = batch_size or input_ids.size(0)
        logps, entropies = [], []
        for start in range(0, input_ids.size(0), step):
            ids, mask = input_ids[start:start + step], attention_mask[start:start + step]
            head = choose_head(self._logprob.head, ids.device, ids.size(0), int(logits_to_keep), vocab)
            got = completion_logps(model, ids, mask, logits_to_keep, temperature=self.temperature,
                                   compute_entropy=compute_entropy, head=head, shared_prefix=share,
                                   config=unwrapped.config, autocast=self.accelerator.autocast)
            if got is None:
                got = plain(model, ids, mask, logits_to_keep, compute_entropy=compute_entropy)[:2]
            logps.append(got[0])
            entropies.append(got[1])
        return torch.cat(logps), torch.cat(entropies) if compute_entropy else None, None

    def _compute_loss(self, model, inputs):
        """TRL's loss on the (B, T) batch; with `train.loss_chunks` the mean of it over unsloth's
        row chunks of the micro-batch (training/losses.py)."""
        from .losses import chunked_loss

        return chunked_loss(super()._compute_loss, model, inputs, getattr(self.args, "loss_chunks", None))

    def _kl_reference(self):
        """The scope in which TRL's reference pass uses the method's adapter copy (or nothing)."""
        if getattr(self, "_kl_adapter", None) is None:
            return contextlib.nullcontext()
        from .kl_reference import reference_scope

        return reference_scope(self._policy, self._kl_adapter)

    def _shape(self, advantages: torch.Tensor, reward_output: RewardOutput, completion_mask: torch.Tensor,
               group: int) -> torch.Tensor:
        """The method's `shape_advantages` on (B, T) CPU tensors; checks the shape it returns."""
        mask = completion_mask.detach().to("cpu", torch.float32)
        shaped = self._method.shape_advantages(advantages, output=reward_output, mask=mask, group_size=group)
        if not isinstance(shaped, torch.Tensor) or tuple(shaped.shape) != tuple(advantages.shape):
            got = tuple(shaped.shape) if isinstance(shaped, torch.Tensor) else type(shaped).__name__
            raise ValueError(f"method '{self._method.name}': shape_advantages returned {got}; return a tensor "
                             f"of shape {tuple(advantages.shape)} (B, T)")
        if shaped is advantages:  # the default hook: bit-for-bit what token_advantages gave
            return advantages
        return shaped * mask  # padding never carries an advantage, whatever the hook did

    def _get_train_sampler(self, dataset=None):
        """TRL's sampler with the shuffle keyed by epoch, so a resumed run replays no epoch's
        order (training/data_order.py)."""
        from .data_order import EpochRepeatSampler

        return EpochRepeatSampler.like(super()._get_train_sampler(dataset))

    # -- checkpoints: whole or absent (training/checkpoints.py) -------------------------------
    def checkpoint_parts(self) -> list[str]:
        """Files (relative to checkpoint-N/) without which this run cannot resume from a checkpoint."""
        parts = ["trainer_state.json", "adapter_model.safetensors"]
        if not self.is_deepspeed_enabled:  # DeepSpeed keeps its optimizer in its own global_step folder
            parts += ["optimizer.pt", "scheduler.pt"]
        if getattr(self, "_policy", None) is not None:
            from .policy import copy_parts

            parts += copy_parts(self._policy.copies)
        return parts

    def _get_output_dir(self, trial):
        # While a checkpoint is saved, TRL and transformers write under its staging folder.
        staging = getattr(self, "_staging_root", None)
        return str(staging) if staging is not None else super()._get_output_dir(trial)

    def _save_checkpoint(self, model, trial):
        """TRL's checkpoint plus the harness's parts, staged and sealed (training/checkpoints.py)."""
        import shutil

        from . import checkpoints
        from .distributed import barrier

        with self._phase("save"):
            out, step = Path(super()._get_output_dir(trial)), int(self.state.global_step)
            root = checkpoints.staging_root(out, step)
            if self.args.should_save and root.exists():
                shutil.rmtree(root)
            barrier()
            self._staging_root = root
            try:
                super()._save_checkpoint(model, trial)  # its rotation sees the staging folder only
            finally:
                self._staging_root = None
            folder = root / f"{checkpoints.PREFIX}-{step}"
            self._save_checkpoint_parts(folder)
            barrier()  # every process's files (RNG states) are in the folder before it is sealed
            if self.args.should_save:
                checkpoints.seal(folder, out / folder.name, self.checkpoint_parts())
                checkpoints.rotate(out, self.args.save_total_limit)
            barrier()

    def _save_checkpoint_parts(self, folder: Path) -> None:
        """The harness's parts of a checkpoint: the method's `on_checkpoint`, then the policy's
        adapter copies (PPO adds its critic)."""
        policy = getattr(self, "_policy", None)
        if policy is None:
            return
        self._method.on_checkpoint(policy, step=int(self.state.global_step))
        if self.state.is_world_process_zero:
            from .policy import POLICY_ADAPTERS_DIR

            policy.save_copies(folder / POLICY_ADAPTERS_DIR)

    # -- policy access inside the reward (training/policy.py) ----------------------
    def _setup_policy(self, method: Method | None):
        """The PolicyHandle for a method with `needs_policy`, its copies made, saved per checkpoint."""
        if method is None or not getattr(method, "needs_policy", False):
            return None
        from .policy import PolicyHandle

        policy = PolicyHandle(self.accelerator.unwrap_model(self.model), self.processing_class)
        method.setup_policy(policy)  # before train() builds the optimizer: frozen copies stay out of it
        self._token_reward.policy = policy
        return policy  # its copies are saved with each checkpoint (_save_checkpoint_parts)

    def train(self, resume_from_checkpoint=None, **kwargs):
        """TRL's train, after restoring the policy's adapter copies from the checkpoint resumed."""
        if getattr(self, "_policy", None) is not None and resume_from_checkpoint:
            from transformers.trainer_utils import get_last_checkpoint

            from .policy import POLICY_ADAPTERS_DIR

            folder = (resume_from_checkpoint if isinstance(resume_from_checkpoint, (str, Path))
                      else get_last_checkpoint(self.args.output_dir))
            if folder:
                loaded = self._policy.load_copies(Path(folder) / POLICY_ADAPTERS_DIR)
                if sorted(loaded) != sorted(self._policy.copies):  # never a silently fresh copy
                    from ..core.errors import DataError

                    raise DataError(f"checkpoint {folder} holds policy copies {loaded}, the method made "
                                    f"{self._policy.copies}; resume from a checkpoint this method wrote, or "
                                    f"start a new run directory")
                log.info("restored policy adapter copies %s from %s", loaded, folder)
        if (isinstance(resume_from_checkpoint, (str, Path)) and not (self.is_deepspeed_enabled or self.is_fsdp_enabled)
                and checkpoint_step(resume_from_checkpoint) >= self.args.max_steps):
            # transformers trains one step before it checks max_steps: a run killed after its last
            # checkpoint would train (and checkpoint) a step past train.steps. Load, do not train.
            log.info("%s holds the last step; nothing left to train", Path(resume_from_checkpoint).name)
            self._load_from_checkpoint(str(resume_from_checkpoint))
            return None
        return super().train(resume_from_checkpoint=resume_from_checkpoint, **kwargs)

    def _save(self, output_dir=None, state_dict=None):
        """Checkpoints and the final adapter hold the trained adapter only (copies: policy_adapters/)."""
        policy = getattr(self, "_policy", None)
        with policy.saving_trained_only() if policy is not None else contextlib.nullcontext():
            return super()._save(output_dir, state_dict)


def checkpoint_step(checkpoint: str | Path | None) -> int:
    """The optimizer step a checkpoint directory holds (0 when there is none)."""
    if not checkpoint:
        return 0
    state = Path(checkpoint) / "trainer_state.json"
    if state.is_file():
        return int(json.loads(state.read_text(encoding="utf-8"))["global_step"])
    return int(Path(checkpoint).name.rsplit("-", 1)[-1])


def truncate_jsonl(path: Path, last_step: int) -> int:
    """Drop the lines of a step-keyed JSONL log written after step `last_step`; returns how many.

    A killed run has logged (and recorded rewards for) steps past its last checkpoint; the
    resumed run trains those steps again, so without this they would appear twice. Lines
    without a step, and a last line cut by the kill, are dropped too.
    """
    path = Path(path)
    if not path.is_file():
        return 0
    kept, dropped = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            step = json.loads(line).get("step")
        except (json.JSONDecodeError, AttributeError):
            step = None
        if isinstance(step, int) and step <= last_step:
            kept.append(line)
        else:
            dropped += 1
    if dropped:
        from ..core.rundir import atomic_write

        atomic_write(path, "".join(f"{line}\n" for line in kept))  # a second kill leaves the old or the new file
    return dropped
