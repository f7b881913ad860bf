"""The policy as a reward may use it (method interface version 2).

A method with `needs_policy = True` receives a `PolicyHandle` in every reward call. It is the
only object such a plugin touches: teacher-forced log-probabilities of given target tokens
under the trained LoRA adapter or under a frozen copy of it, and making and mixing such copies
(NOVER's proxy: a copy updated as 0.9 proxy + 0.1 policy at each checkpoint). The trainer
builds the handle after TRL has wrapped the model in PEFT, saves the copies with every
checkpoint (`<checkpoint>/policy_adapters/<name>/`, part of the sealed checkpoint:
`TokenGRPOTrainer._save_checkpoint_parts`) and restores them on resume (`TokenGRPOTrainer.train`).

Copies are PEFT adapters on the same base model, so they cost only the adapter's weights; they
never require gradients and are never in the optimizer (it is built from parameters that
require them, after `Method.setup_policy` has run).
"""
from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch

POLICY_ADAPTERS_DIR = "policy_adapters"
_MANIFEST = "copies.json"


def copy_parts(copies: Sequence[str]) -> list[str]:
    """The files of a checkpoint (relative to checkpoint-N/) that hold these adapter copies: a
    checkpoint without them is incomplete for a method that made them (training/checkpoints.py)."""
    if not copies:
        return []
    return [f"{POLICY_ADAPTERS_DIR}/{_MANIFEST}", *(f"{POLICY_ADAPTERS_DIR}/{name}/adapter.safetensors"
                                                   for name in copies)]


class PolicyHandle:
    """Read access to the policy and its adapter copies for a reward (module docstring).

    model: the unwrapped PEFT model the trainer optimises; tokenizer: its tokenizer;
    adapter_name: the trained adapter (the one active when the handle was built).
    """

    def __init__(self, model: Any, tokenizer: Any, *, adapter_name: str | None = None):
        if not hasattr(model, "peft_config"):
            raise TypeError(f"PolicyHandle needs a PEFT model (LoRA), got {type(model).__name__}")
        self.model = model
        self.tokenizer = tokenizer
        self.adapter_name = adapter_name or model.active_adapter
        self.copies: list[str] = []

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    # -- log-probabilities ----------------------------------------------------------------
    @torch.no_grad()
    def target_logprobs(self, contexts: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], *,
                        adapter: str | None = None, batch_size: int | None = None) -> list[torch.Tensor]:
        """Teacher-forced log p(target token | context, earlier target tokens) per sequence.

        contexts[b], targets[b]: token ids (context non-empty). One no-grad forward pass over
        all B sequences (or chunks of `batch_size`), left-padded with an attention mask and
        position ids counted from each sequence's first real token, so padding changes nothing;
        logits only for the last max(len(target)) + 1 positions. Returns B float32 CPU tensors,
        element b of shape (len(targets[b]),). `adapter`: None = the trained adapter, a name =
        that adapter (a copy) for this call only. Training mode, the active adapter and every
        parameter's requires_grad are restored afterwards, even on error.
        """
        if len(contexts) != len(targets):
            raise ValueError(f"target_logprobs: {len(contexts)} contexts for {len(targets)} targets")
        for b, ctx in enumerate(contexts):
            if len(ctx) == 0:
                raise ValueError(f"target_logprobs: context {b} is empty; give at least one token (e.g. BOS)")
        out: list[torch.Tensor] = [torch.zeros(0)] * len(contexts)
        step = int(batch_size) if batch_size else max(len(contexts), 1)
        with self.using(adapter):
            for start in range(0, len(contexts), step):
                chunk = range(start, min(start + step, len(contexts)))
                for b, values in zip(chunk, self._forward([contexts[i] for i in chunk], [targets[i] for i in chunk])):
                    out[b] = values
        return out

    def _forward(self, contexts: list[Sequence[int]], targets: list[Sequence[int]]) -> list[torch.Tensor]:
        """One forward pass: input (B, L) left-padded; logits (B, K, V), K = max target + 1."""
        lengths = [len(c) + len(t) for c, t in zip(contexts, targets)]
        width, keep = max(lengths), max(len(t) for t in targets) + 1
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        ids = torch.full((len(lengths), width), int(pad), dtype=torch.long)
        mask = torch.zeros((len(lengths), width), dtype=torch.long)
        for b, (c, t) in enumerate(zip(contexts, targets)):
            ids[b, width - lengths[b]:] = torch.tensor(list(c) + list(t), dtype=torch.long)
            mask[b, width - lengths[b]:] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        device = self.device
        logits = self.model(input_ids=ids.to(device), attention_mask=mask.to(device),
                            position_ids=positions.to(device), logits_to_keep=keep, use_cache=False).logits
        logits = logits[:, -keep:]  # a model that ignores logits_to_keep returns all positions
        result = []
        for b, t in enumerate(targets):
            n = len(t)
            if n == 0:
                result.append(torch.zeros(0, dtype=torch.float32))
                continue
            # Kept position j holds sequence position width - keep + j; target token i sits at
            # width - n + i and is predicted by the position before it.
            rows = logits[b, keep - n - 1:keep - 1].float().log_softmax(-1)
            index = torch.tensor(list(t), dtype=torch.long, device=rows.device).unsqueeze(-1)
            result.append(rows.gather(-1, index).squeeze(-1).cpu())
        return result

    @contextlib.contextmanager
    def using(self, adapter: str | None = None) -> Iterator[None]:
        """Eval mode with `adapter` (None: the trained one) active; everything restored after."""
        name = adapter or self.adapter_name
        if name not in self.model.peft_config:
            raise ValueError(f"no adapter named {name!r}; the policy has {sorted(self.model.peft_config)}")
        was_training = self.model.training
        previous = self.model.active_adapter
        # PEFT's set_adapter makes the adapter it activates trainable and freezes the others
        # (a PPO critic adapter too): remember every flag and put it back.
        grads = [(p, p.requires_grad) for p in self.model.parameters()]
        try:
            if name != previous:
                self.model.set_adapter(name)
            self.model.eval()
            yield
        finally:
            if self.model.active_adapter != previous:
                self.model.set_adapter(previous)
            for p, flag in grads:
                p.requires_grad_(flag)
            self.model.train(was_training)

    # -- adapter copies -------------------------------------------------------------------
    def _adapter_params(self, name: str) -> dict[str, torch.nn.Parameter]:
        """LoRA parameters of adapter `name`, keyed by their name with the adapter's part removed."""
        marker = f".{name}."
        found = {}
        for key, param in self.model.named_parameters():
            if "lora_" in key and marker in key:
                found[key.replace(marker, ".<adapter>.", 1)] = param
        return found

    def copy_adapter(self, name: str, source: str | None = None) -> None:
        """A frozen copy of adapter `source` (None: the trained one) under `name`."""
        source = source or self.adapter_name
        if name in self.model.peft_config:
            raise ValueError(f"an adapter named {name!r} exists already; choose another name")
        if source not in self.model.peft_config:
            raise ValueError(f"no adapter named {source!r} to copy")
        config = copy.deepcopy(self.model.peft_config[source])
        config.inference_mode = True
        grads = [(p, p.requires_grad) for p in self.model.parameters()]
        self.model.add_adapter(name, config)
        for p, flag in grads:  # add_adapter may re-mark trainable modules; ours stay as they were
            p.requires_grad_(flag)
        src, dst = self._adapter_params(source), self._adapter_params(name)
        if set(src) != set(dst) or not src:
            raise RuntimeError(f"adapter copy {name!r} does not mirror {source!r} ({len(dst)} vs {len(src)} tensors)")
        with torch.no_grad():
            for key, param in dst.items():
                param.copy_(src[key])
                param.requires_grad_(False)
        self.copies.append(name)

    def mix_adapter(self, target: str, source: str | None = None, *, keep: float) -> None:
        """Every LoRA weight of `target` becomes keep * target + (1 - keep) * source (each of
        lora_A and lora_B on its own, as NOVER's proxy update does). source None: the trained adapter."""
        if not 0.0 <= float(keep) <= 1.0:
            raise ValueError(f"mix_adapter: keep={keep} must lie in [0, 1]")
        source = source or self.adapter_name
        src, dst = self._adapter_params(source), self._adapter_params(target)
        if not dst or set(src) != set(dst):
            raise ValueError(f"mix_adapter: adapters {target!r} and {source!r} do not have the same LoRA weights")
        with torch.no_grad():
            for key, param in dst.items():
                param.mul_(float(keep)).add_(src[key].detach().to(param.dtype), alpha=1.0 - float(keep))

    def state_of(self, name: str) -> dict[str, torch.Tensor]:
        """CPU copies of adapter `name`'s LoRA weights (keys without the adapter name)."""
        return {key: p.detach().cpu().clone() for key, p in self._adapter_params(name).items()}

    def save_copies(self, directory: str | Path) -> None:
        """Write every copy to `directory/<name>/adapter.safetensors` plus a manifest."""
        from safetensors.torch import save_file

        directory = Path(directory)
        for name in self.copies:
            (directory / name).mkdir(parents=True, exist_ok=True)
            save_file({k: v.contiguous() for k, v in self.state_of(name).items()},
                      str(directory / name / "adapter.safetensors"))
        directory.mkdir(parents=True, exist_ok=True)
        (directory / _MANIFEST).write_text(json.dumps({"copies": self.copies}) + "\n", encoding="utf-8")

    def load_copies(self, directory: str | Path) -> list[str]:
        """Load the copies saved in `directory` into the adapters of the same names (which
        `Method.setup_policy` made); returns the names loaded ([] when nothing was saved)."""
        from safetensors.torch import load_file

        directory = Path(directory)
        if not (directory / _MANIFEST).is_file():
            return []
        names = json.loads((directory / _MANIFEST).read_text(encoding="utf-8"))["copies"]
        for name in names:
            if name not in self.copies:
                raise RuntimeError(f"checkpoint {directory} holds policy copy {name!r}, which the method did not "
                                   f"create in setup_policy (made: {self.copies})")
            state = load_file(str(directory / name / "adapter.safetensors"))
            params = self._adapter_params(name)
            if set(state) != set(params):
                raise RuntimeError(f"checkpoint copy {name!r} in {directory} does not match the adapter's weights")
            with torch.no_grad():
                for key, param in params.items():
                    param.copy_(state[key].to(param.device, param.dtype))
        return list(names)

    @contextlib.contextmanager
    def saving_trained_only(self) -> Iterator[None]:
        """While active, `model.save_pretrained` writes the trained adapter alone: PEFT would
        add each copy as a subfolder, and transformers' resume then loads only the subfolders
        and silently skips the policy's adapter in the checkpoint's root."""
        if not self.copies:
            yield
            return
        model, original = self.model, type(self.model).save_pretrained

        def save_pretrained(*args, **kwargs):
            kwargs["selected_adapters"] = [self.adapter_name]
            return original(model, *args, **kwargs)

        model.save_pretrained = save_pretrained
        try:
            yield
        finally:
            del model.save_pretrained
