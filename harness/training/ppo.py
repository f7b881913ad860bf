"""PPO with a learned critic on TRL 1.16's GRPOTrainer (`algorithm: ppo`, docs/BASELINES.md §6).

TRL 1.16 has no PPO trainer, so this subclasses the token-level GRPO trainer and keeps TRL's
generation (HF and vLLM), PEFT, Accelerate, logging, checkpointing and clipped policy loss.
Only three things change:

- `_generate_and_score_completions`: after TRL's rollout, the method's per-token *rewards*
  (RewardOutput.token_returns, read as r_t) are clipped, the per-token k3 KL to the reference
  (adapters disabled) is subtracted (beta = train.beta; TRL's own KL is off, beta = 0), the
  critic gives V_old (B, T), and GAE turns them into advantages (B, T), whitened over the
  rollout's valid tokens, and returns (B, T). The batch carries `advantages`, `returns`,
  `old_values`, `value_mask` (all (B, T)) and the rollout log-probs `old_per_token_logps`.
- `_compute_loss` / `training_step`: TRL's clipped policy loss on the (B, T) advantages and
  its backward, then (timer phase `critic`) the clipped value loss times vf_coef on the same
  micro-batch, back-propagated into the critic's parameters only, so the policy's and the
  critic's graphs are never in memory together.
- The optimiser: one parameter group for the actor (train.learning_rate) and one for the
  critic (train.ppo.critic_learning_rate), gradient norms clipped per group.

PPO epochs and minibatches are TRL's `num_iterations` and `steps_per_generation`: one rollout
of Q x C completions is reused for `epochs` passes of `minibatches` optimizer steps each, so
TRL's max_steps = train.steps x epochs x minibatches (train.steps counts rollouts, as the
protocol's 100 steps do) and checkpoints fall on rollout boundaries. A completion whose
reward is None ("no signal") gets zero advantage and no value loss.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from trl import GRPOTrainer

from ..core.errors import ConfigError
from .critic import FullCritic, LoraCritic
from .distributed import average_gradients, broadcast_parameters, deepspeed_stage, global_whiten
from .gae import clipped_value_loss, gae, kl_k3, shaped_rewards, whiten
from .settings import PPOSettings
from .grpo import TokenGRPOTrainer


def rollout_targets(rewards: torch.Tensor, valid: torch.Tensor, mask: torch.Tensor, values: torch.Tensor,
                    logps: torch.Tensor, ref_logps: torch.Tensor, settings: PPOSettings,
                    whiten_fn=whiten) -> dict[str, torch.Tensor]:
    """The PPO targets of one rollout (pure tensor math; the trainer and the tests share it).

    rewards: (B, T) method rewards (0 on padding); valid: (B,) bool, False for "no signal";
    mask: (B, T) completion mask; values: (B, T) V_old; logps, ref_logps: (B, T) rollout and
    reference log-probs. Returns `advantages`, `returns`, `value_mask`, `kl` (all (B, T)).
    whiten_fn: `gae.whiten`, or `distributed.global_whiten` (statistics over every process).
    """
    mask = mask.float()
    kl = kl_k3(logps.float(), ref_logps.float(), settings.kl_estimator) * mask
    shaped = shaped_rewards(rewards.float(), mask, kl, settings.kl_coef, settings.reward_clip)
    advantages, returns = gae(shaped, values.float(), mask, settings.gamma, settings.lam)
    signal = mask * valid.to(mask.dtype).unsqueeze(1)
    if settings.whiten:
        advantages = whiten_fn(advantages, signal)
    return {"advantages": advantages * signal, "returns": returns, "value_mask": signal, "kl": kl}


class PPOTrainer(TokenGRPOTrainer):
    """GRPOTrainer subclass training a policy LoRA and a critic with PPO (module docstring)."""

    def __init__(self, *args, ppo: PPOSettings, lora_config: Any = None, critic_model: Any = None, **kwargs):
        self._ppo = ppo
        self._value_inputs = None  # the micro-batch whose value step follows the policy backward
        if deepspeed_stage() is not None or getattr(kwargs.get("args"), "deepspeed", None):
            # Before TRL's __init__, which would load a colocated vLLM engine first.
            raise ConfigError("PPO methods train under launcher.config=ddp (or launcher=torchrun), not DeepSpeed: "
                              "the critic's value head is outside the DeepSpeed engine")
        super().__init__(*args, **kwargs)
        if self.is_deepspeed_enabled:
            # The value head lives outside DeepSpeed's engine, which also takes over gradient
            # clipping, where the critic's gradients are averaged over processes (_clip_grad_norm).
            raise ConfigError("PPO methods train under launcher.config=ddp (or launcher=torchrun), not DeepSpeed: "
                              "the critic's value head is outside the DeepSpeed engine")
        seed = int(self.args.seed)
        if ppo.critic == "lora":
            if lora_config is None:
                raise ValueError("the LoRA critic needs the LoRA config of the policy")
            self._critic = LoraCritic(self.accelerator.unwrap_model(self.model), lora_config, seed)
        else:
            if critic_model is None:
                raise ValueError("train.ppo.critic=full needs a separately loaded critic model")
            self._critic = FullCritic(critic_model, seed, self.accelerator.device)
        if self.accelerator.num_processes > 1:
            # The critic trains outside DDP's forward (its own graph, in training_step): DDP must
            # not reduce its LoRA weights (its reducer fails on them); _clip_grad_norm averages them.
            from torch.nn.parallel import DistributedDataParallel

            critic = {id(p) for p in self._critic.parameters()}
            ignored = [name for name, p in self.model.named_parameters() if id(p) in critic]
            DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(self.model, ignored)
            broadcast_parameters(self._critic.parameters())  # one initial critic (LoRA A is random)

    # -- rollout ---------------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs):
        """Generate, score and return the batch with PPO targets.

        In: B dataset rows (each question repeated C times in a row).
        Out: TRL's batch dict with `advantages`, `returns`, `old_values`, `value_mask`,
        `old_per_token_logps`, all (B, T) where T = completion_ids.size(1).
        """
        with self._phase("rollout"):
            output = GRPOTrainer._generate_and_score_completions(self, inputs)
            pending = self._token_reward.pending
            self._token_reward.pending = self._token_reward.pending_output = None
            self._token_reward.pending_batch = dict(self._token_reward.pending_batch or {}, returns=pending)
            if pending is None:
                raise RuntimeError("the method reward was not called for this batch")
            ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
            attention = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
            width = output["completion_ids"].size(1)
            chunk = self.args.per_device_train_batch_size
            with torch.no_grad():
                logps = output.get("old_per_token_logps")
                if logps is None:  # TRL skips it when one pass reuses nothing; the KL needs it
                    logps = self._get_per_token_logps_and_entropies(self.model, ids, attention, width,
                                                                    batch_size=chunk)[0]
                    output["old_per_token_logps"] = logps
                with self.accelerator.unwrap_model(self.model).disable_adapter():
                    ref = self._get_per_token_logps_and_entropies(self.model, ids, attention, width,
                                                                  batch_size=chunk)[0]
                with self._phase("critic"):
                    values = self._critic.values(ids, attention, width, batch_size=chunk)
        device = output["completion_ids"].device
        mask = output["completion_mask"].float()
        rewards, valid = _pad_rewards(pending, width, device)
        targets = rollout_targets(rewards, valid, mask, values, logps, ref, self._ppo, whiten_fn=global_whiten)
        mode = "train" if self.model.training else "eval"
        advantages = targets["advantages"]
        output.update(advantages=advantages, returns=targets["returns"], old_values=values.float(),
                      value_mask=targets["value_mask"])
        self._record_rollouts(advantages, output["completion_mask"], self.num_generations)
        tokens = mask.sum().clamp(min=1.0)
        metrics = self._metrics[mode]
        metrics["kl"].append(float(targets["kl"].sum() / tokens))
        metrics["ppo/token_reward_sum"].append(float((rewards * mask).sum() / max(len(pending), 1)))
        metrics["ppo/values_mean"].append(float((values * mask).sum() / tokens))
        metrics["ppo/returns_mean"].append(float((targets["returns"] * mask).sum() / tokens))
        metrics["advantages/max_abs"].append(float(advantages.abs().max()) if advantages.numel() else 0.0)
        return output

    # -- log-probs ---------------------------------------------------------------------------
    def use_shared_prefix(self, on: bool) -> None:
        """Policy and critic passes with the shared-prefix forward (on, the default) or the plain
        forward over every whole row (the reference the equivalence tests compare with). The
        policy's passes are TokenGRPOTrainer's (training/logprobs.py)."""
        self.shared_prefix = bool(on)
        self._critic.shared_prefix = bool(on)

    # -- loss ------------------------------------------------------------------------------
    def _compute_loss(self, model, inputs):
        """TRL's clipped policy loss on (B, T) advantages. The clipped value loss (x vf_coef) on
        the same micro-batch follows in `training_step`, once the policy's backward has freed its
        graph, so the two graphs are never in memory together; logged as `value_loss`."""
        loss = super()._compute_loss(model, inputs)
        if self.model.training and torch.is_grad_enabled():
            self._value_inputs = inputs
        else:
            with self._phase("critic"):
                self._value_step(inputs)
        return loss

    def training_step(self, model, inputs, num_items_in_batch=None):
        """TRL's step (policy loss and its backward), then the critic's step on that micro-batch."""
        loss = super().training_step(model, inputs, num_items_in_batch)
        self.value_step()
        return loss

    def value_step(self) -> None:
        """Forward, clipped value loss and backward of the critic on the last policy micro-batch."""
        inputs, self._value_inputs = self._value_inputs, None
        if inputs is not None:
            with self._phase("critic"):
                self._value_step(inputs)

    def _value_step(self, inputs) -> None:
        ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
        attention = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
        training = self.model.training and torch.is_grad_enabled()
        # The backward runs with the critic adapter still active: with gradient checkpointing the
        # decoder layers recompute their forward during it, and under the policy adapter that
        # recompute would give the critic another network's gradients.
        with self._critic.body_context(), torch.set_grad_enabled(training):
            values = self._critic.values(ids, attention, inputs["completion_ids"].size(1))
            loss = clipped_value_loss(values, inputs["old_values"], inputs["returns"], inputs["value_mask"],
                                      self._ppo.cliprange_value)
            if training:
                self.accelerator.backward(self._ppo.vf_coef * loss / self.current_gradient_accumulation_steps)
        mode = "train" if self.model.training else "eval"
        moved = (values.detach() - inputs["old_values"]).abs() > self._ppo.cliprange_value
        vmask = inputs["value_mask"]
        self._metrics[mode]["value_loss"].append(float(loss.detach()))
        self._metrics[mode]["value_clipfrac"].append(float((moved.float() * vmask).sum() / vmask.sum().clamp(min=1)))

    # -- optimiser -------------------------------------------------------------------------
    def create_optimizer(self, model=None):
        """AdamW (TrainingArguments' optimiser) with an actor group and a critic group."""
        if self.optimizer is None:
            critic = self._critic.parameters()
            ids = {id(p) for p in critic}
            actor = [p for p in self.model.parameters() if p.requires_grad and id(p) not in ids]
            optimizer_cls, optimizer_kwargs = self.get_optimizer_cls_and_kwargs(self.args, self.model)
            optimizer_kwargs.pop("lr", None)
            groups = [
                {"params": actor, "lr": self.args.learning_rate, "weight_decay": self.args.weight_decay},
                {"params": critic, "lr": self._ppo.critic_learning_rate, "weight_decay": self.args.weight_decay},
            ]
            self.optimizer = optimizer_cls(groups, **optimizer_kwargs)
            # Trainer zeroes gradients with model.zero_grad(); the value head is not part of the
            # model, so without this its gradients would pile up across optimizer steps.
            self.optimizer.register_step_post_hook(lambda *_: self._zero_critic_grads())
        return self.optimizer

    def _zero_critic_grads(self) -> None:
        for p in self._critic.parameters():
            p.grad = None

    def _clip_grad_norm(self, model):
        """Clip the actor's and the critic's gradients separately (docs/BASELINES.md §6); returns the actor's norm."""
        groups = self.optimizer.param_groups
        average_gradients(groups[1]["params"])  # data parallel: DDP does not reduce the critic's gradients
        actor = torch.nn.utils.clip_grad_norm_(groups[0]["params"], self.args.max_grad_norm)
        critic = torch.nn.utils.clip_grad_norm_(groups[1]["params"], self.args.max_grad_norm)
        self._metrics["train"]["grad_norm/critic"].append(float(critic))
        return actor

    # -- checkpoints -----------------------------------------------------------------------
    def checkpoint_parts(self) -> list[str]:
        from .critic import CHECKPOINT_FILE

        return [*super().checkpoint_parts(), CHECKPOINT_FILE]

    def _save_checkpoint_parts(self, folder: Path) -> None:
        """The critic inside the staged checkpoint, so it is sealed with the rest."""
        super()._save_checkpoint_parts(folder)
        if self.state.is_world_process_zero:  # the critic is replicated; one process writes it
            self._critic.save(folder)

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        """Policy adapter from the checkpoint's root, critic from critic.safetensors.

        transformers' loader, seeing the critic adapter's subfolder that PEFT writes for a
        second adapter, loads only the subfolders and silently skips the policy adapter in the
        root (a resumed run would restart the policy from zero), so the LoRA critic path loads
        the policy itself."""
        if self._ppo.critic == "lora":
            peft_model = self.accelerator.unwrap_model(self.model)
            active = peft_model.active_adapter
            peft_model.load_adapter(resume_from_checkpoint, active, is_trainable=True)
            peft_model.set_adapter(active)
        else:
            super()._load_from_checkpoint(resume_from_checkpoint, model)
        self._critic.load(resume_from_checkpoint)

    @property
    def critic(self):
        return self._critic

    def save_critic(self, directory: str | Path) -> Path:
        return self._critic.save(directory)


def _pad_rewards(pending: list[list[float] | None], width: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T) rewards (0 on padding and for None) and (B,) bool valid from the method's lists."""
    rewards = torch.zeros(len(pending), width, dtype=torch.float32)
    for b, row in enumerate(pending):
        if row:
            n = min(len(row), width)
            rewards[b, :n] = torch.tensor(row[:n], dtype=torch.float32)
    valid = torch.tensor([r is not None for r in pending], dtype=torch.bool)
    return rewards.to(device), valid.to(device)
