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
default is the identity, so methods that do not override it (CorVer) train exactly as before.

KL reference (interface 4): a method whose `kl_reference_adapter` names one of its adapter
copies gets the KL term against that copy instead of the adapter-disabled base (kl_reference.py).

Policy access (interface 2): for a method with `needs_policy` the trainer builds a
`PolicyHandle` (training/policy.py) after TRL's PEFT wrap, calls `setup_policy`, passes
`policy=` to every reward call (None otherwise), calls `on_checkpoint` and saves the adapter
copies beside each checkpoint, and restores them on resume.

Timing hooks (harness.timer phases): rollout = generation and log-prob scoring of the
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

from ..errors import RewardContractError
from ..method import Method, RewardFn, RewardOutput
from .callbacks import ProgressBarCallback
from .distributed import check_whole_groups, gather_records, global_token_advantages
from .signal_log import install_filter, reasons_of, step_line

log = logging.getLogger(__name__)

ROW_KEYS = ("id", "question", "answers", "title")


class _TokenReward:
    """Adapter TRL calls as a reward function; stashes per-token returns for the trainer."""

    def __init__(self, reward_fn: RewardFn, name: str, phase, records_path: Path | None):
        self.reward_fn = reward_fn
        self.__name__ = name
        self.phase = phase
        self.records_path = records_path
        self.pending: list[list[float] | None] | None = None
        self.pending_output: RewardOutput | None = None
        self.policy = None  # PolicyHandle for methods with needs_policy (interface 2), else None

    def __call__(self, prompts, completions, completion_ids, **kwargs) -> list[float | None]:
        n = len(completions)
        rows = [{k: kwargs[k][i] for k in ROW_KEYS if k in kwargs} for i in range(n)]
        texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        # The prompt as the policy saw it: the last user turn of a chat prompt, or the formatted text.
        prompt_texts = [p[-1]["content"] if isinstance(p, list) else str(p) for p in prompts]
        ids = [list(map(int, x)) for x in completion_ids]
        with self.phase("reward"):
            out: RewardOutput = self.reward_fn(prompts=prompt_texts, completions=texts, completion_ids=ids, rows=rows,
                                               policy=self.policy)
        where = f"method={self.__name__}: its reward"
        if not isinstance(out, RewardOutput):  # e.g. a TRL-style list of floats
            raise RewardContractError(
                f"{where} returned {type(out).__name__}, not RewardOutput; return "
                f"factrl.harness.method.RewardOutput(token_returns=[one list per completion], ...)")
        returns = list(out.token_returns)
        if len(returns) != n:
            raise RewardContractError(f"{where} returned {len(returns)} token-return lists for {n} completions; "
                                      f"return one list (or None) per completion")
        for b, r in enumerate(returns):
            if r is not None and len(r) != len(ids[b]):
                raise RewardContractError(f"{where}: completion {b} has {len(ids[b])} tokens but {len(r)} returns; "
                                          f"return one value per completion token")
        if out.extras is not None and len(out.extras) != n:
            raise RewardContractError(f"{where} returned {len(out.extras)} extras for {n} completions; "
                                      f"return one dict per completion or None")
        if out.no_signal_reasons is not None and len(out.no_signal_reasons) != n:
            raise RewardContractError(f"{where} returned {len(out.no_signal_reasons)} no_signal_reasons for {n} "
                                      f"completions; return one reason (or None) per completion, or None")
        # A completion with no tokens carries no signal, whatever the method returned for it.
        returns = [r if ids[b] else None for b, r in enumerate(returns)]
        self.pending = returns
        self.pending_output = out
        state = kwargs.get("trainer_state")
        missing = reasons_of(returns, out.no_signal_reasons, ids)
        if missing:  # one counted line per step; TRL's own warning is filtered (signal_log.py)
            log.info("%s", step_line(int(state.global_step) + 1 if state is not None else None, n, missing))
        log_metric = kwargs.get("log_metric")
        if log_metric is not None:
            for key, value in out.diagnostics.items():
                if value is not None and not (isinstance(value, float) and math.isnan(value)):
                    log_metric(f"rewards/{self.__name__}/{key}", float(value))
            log_metric(f"rewards/{self.__name__}/no_signal", sum(r is None for r in returns) / max(n, 1))
            for reason, count in missing.items():  # shares of the batch, by reason (the grid's check reads them)
                log_metric(f"rewards/{self.__name__}/no_signal/{reason}", count / max(n, 1))
        # Every process's records, appended by rank 0 alone (collective: all processes call it).
        records = gather_records(out.records)
        if self.records_path is not None and records:
            step = int(state.global_step) + 1 if state is not None else None
            self.records_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.records_path, "a", encoding="utf-8") as handle:  # appended, never rewritten
                for record in records:
                    handle.write(json.dumps({"step": step, **record}, default=str) + "\n")
        return [sum(r) / len(r) if r else None for r in returns]


class TokenGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose advantages are per token, shape (B, T), from a Method's reward."""

    def __init__(self, *args, method_reward: RewardFn, reward_name: str, timer: Any = None,
                 records_path: Path | None = None, std_floor: float | None = None, adv_epsilon: float | None = None,
                 method: Method | None = None, presence_penalty: float = 0.0, model_card: str | None = None,
                 **kwargs):
        # The method whose `shape_advantages` hook sees every batch (None: no shaping, as for
        # tests that hand in a bare reward function).
        self._method = method
        self._model_card = model_card  # the harness's train/README.md (model_card.py); None: TRL's
        self._phase = timer.phase if timer is not None else (lambda _name: contextlib.nullcontext())
        self._token_reward = _TokenReward(method_reward, reward_name, self._phase, records_path)
        if std_floor is None or adv_epsilon is None:  # train.advantage_std_floor / advantage_epsilon: the YAML's
            from ..settings import defaults_from_yaml

            train = defaults_from_yaml("train/default.yaml")
            std_floor = train["advantage_std_floor"] if std_floor is None else std_floor
            adv_epsilon = train["advantage_epsilon"] if adv_epsilon is None else adv_epsilon
        self._std_floor = std_floor
        self._adv_epsilon = adv_epsilon
        self._presence_penalty = float(presence_penalty)  # HF rollouts (vLLM gets it in generation_kwargs)
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
        # After shaping: the metric reports what reaches the loss.
        max_abs = float(advantages.abs().max()) if advantages.numel() else 0.0
        self._metrics[mode]["advantages/max_abs"].append(max_abs)
        self._metrics[mode]["advantages/mean_return"].append(stats.mean_return)
        self._metrics[mode]["advantages/frac_zero_std_groups"].append(stats.frac_zero_std)
        return output

    def _generate_single_turn(self, *args, **kwargs):
        """TRL's generation; HF rollouts with train.presence_penalty get it as a logits processor
        (training/sampling.py), vLLM rollouts natively through generation_kwargs."""
        if not self._presence_penalty or self.use_vllm:
            return super()._generate_single_turn(*args, **kwargs)
        from .sampling import presence_penalty_generate

        with presence_penalty_generate(self.accelerator.unwrap_model(self.model_wrapped), self._presence_penalty):
            return super()._generate_single_turn(*args, **kwargs)

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
                    from ..errors import DataError

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
        from ..rundir import atomic_write

        atomic_write(path, "".join(f"{line}\n" for line in kept))  # a second kill leaves the old or the new file
    return dropped
