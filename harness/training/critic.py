"""The PPO critic: a scalar value per completion token, V (B, T), from a value head.

Two kinds (`train.ppo.critic`):
- `lora` (default): a second LoRA adapter, named "critic", on the policy's PeftModel, so the
  critic shares the frozen base weights with the policy and the reference (no second copy
  of the model in memory). Its LoRA starts at B = 0, i.e. the critic body starts as the base
  model, which is also where the policy starts ("initialised from the policy", docs/BASELINES.md §6).
- `full`: a separate, fully trainable copy of the base model (RLFH's own setup), for models
  small enough to afford it.

Both put a new value head on the body's last hidden state; V_t is read from the hidden state
*before* token t (the position whose logits predict token t), as OpenRLHF's critic does. The
head is OpenRLHF's (the critic RLFH trains, OpenRLHF/OpenRLHF@3c3be623
openrlhf/models/model.py): `nn.Linear(hidden_size, 1, bias=False)` (model.py:254, the critic
class) initialised by `init_value_head` as `weight.data.normal_(mean=0.0, std=1 / (hidden_size
+ 1))` (model.py:164-172; ppo_critic.py:207 enables it when the critic starts from the policy's
checkpoint, as here). Ours is float32 and draws the normal from its own generator seeded with
the run seed, so it does not shift the trainer's random stream; the distribution is the same.

Checkpoints: `state_dict()` holds the critic's trainable tensors (its LoRA or its full
weights, and the head), saved as `critic.safetensors` beside TRL's files.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

import torch
from torch import nn

from ..core.errors import DataError
from .shared_prefix import checkpointing, prompt_groups, split

ADAPTER = "critic"
CHECKPOINT_FILE = "critic.safetensors"
HEAD_PREFIX = "value_head."


class ValueHead(nn.Module):
    """(B, L, H) hidden states -> (B, L) values, computed in float32; OpenRLHF's head and init."""

    def __init__(self, hidden: int, seed: int):
        super().__init__()
        self.linear = nn.Linear(hidden, 1, bias=False, dtype=torch.float32)
        generator = torch.Generator().manual_seed(int(seed))
        with torch.no_grad():
            # std = 1 / (hidden + 1), not 1 / sqrt(hidden + 1): OpenRLHF model.py:172.
            self.linear.weight.normal_(mean=0.0, std=1.0 / (hidden + 1), generator=generator)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.linear(hidden.float()).squeeze(-1)


def _body(causal_lm: nn.Module) -> nn.Module:
    """The decoder stack of a causal LM (no LM head): the critic never needs vocabulary logits."""
    body = getattr(causal_lm, causal_lm.base_model_prefix, None)
    if body is None:
        raise TypeError(f"{type(causal_lm).__name__} has no `{causal_lm.base_model_prefix}` decoder "
                        f"to read values from")
    return body


class Critic:
    """Common part: chunked value computation, state dict, checkpoint files."""

    head: ValueHead
    shared_prefix = True  # PPOTrainer.use_shared_prefix(False): the plain forward over whole rows

    def body_context(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def body(self) -> nn.Module:
        raise NotImplementedError

    def trainable(self) -> list[tuple[str, nn.Parameter]]:
        raise NotImplementedError

    def parameters(self) -> list[nn.Parameter]:
        return [p for _, p in self.trainable()]

    def values(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int,
               batch_size: int | None = None) -> torch.Tensor:
        """V (B, T) for the last T = logits_to_keep positions of (B, L) prompt + completion ids."""
        batch_size = batch_size or input_ids.size(0)
        out = []
        with self.body_context():
            body = self.body()
            for start in range(0, input_ids.size(0), batch_size):
                ids, mask = input_ids[start:start + batch_size], attention_mask[start:start + batch_size]
                out.append(self.head(self._hidden(body, ids, mask, logits_to_keep)))
        return torch.cat(out, dim=0)

    def _hidden(self, body: nn.Module, ids: torch.Tensor, mask: torch.Tensor, width: int) -> torch.Tensor:
        """(B, width, H): the hidden state before each completion token. Position p's hidden state
        predicts token p + 1, so the value of completion token t is read one position before it.
        Rows sharing a prompt go through the shared-prefix forward (training/shared_prefix.py),
        equal to the plain one up to float rounding."""
        groups = prompt_groups(ids, mask, width) if self.shared_prefix and not checkpointing(body) else None
        parts = None
        if groups is not None:
            parts = split(ids, mask, width, groups, body.config, lambda **inputs: body(**inputs, use_cache=True))
        if parts is None:
            return body(input_ids=ids, attention_mask=mask).last_hidden_state[:, -width - 1:-1]
        suffix, cache = parts
        return body(input_ids=suffix, attention_mask=mask, past_key_values=cache).last_hidden_state[:, :-1]

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {name: p.detach().to("cpu").clone().contiguous() for name, p in self.trainable()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        params = dict(self.trainable())
        missing, unexpected = set(params) - set(state), set(state) - set(params)
        if missing or unexpected:
            raise DataError(f"critic checkpoint does not match this critic (missing {sorted(missing)[:3]}, "
                            f"unexpected {sorted(unexpected)[:3]}); resume with the same train.ppo.critic and lora "
                            f"settings, or start a new run directory")
        with torch.no_grad():
            for name, p in params.items():
                p.copy_(state[name].to(p.device, p.dtype))

    def save(self, directory: str | Path) -> Path:
        from safetensors.torch import save_file

        path = Path(directory) / CHECKPOINT_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        save_file(self.state_dict(), str(path))
        return path

    def load(self, directory: str | Path) -> None:
        from safetensors.torch import load_file

        path = Path(directory) / CHECKPOINT_FILE
        if not path.is_file():
            raise DataError(f"{path} is missing: this PPO checkpoint has no critic; delete {Path(directory)} to "
                            f"resume from the previous checkpoint, or start a new run directory")
        self.load_state_dict(load_file(str(path)))
        self.refresh()

    def refresh(self) -> None:
        """Make the critic's parameters trainable again after PEFT switched adapters."""


class LoraCritic(Critic):
    """A second LoRA adapter ("critic") on the policy's PeftModel plus a value head."""

    def __init__(self, peft_model: nn.Module, lora_config: Any, seed: int):
        self.model = peft_model
        peft_model.add_adapter(ADAPTER, lora_config)
        # PEFT freezes adapters that are not active; ours trains alongside the policy's.
        self._lora = [(n, p) for n, p in peft_model.named_parameters() if f".{ADAPTER}." in n]
        if not self._lora:
            raise RuntimeError("PEFT added no parameters for the critic adapter")
        self._restore_grad()
        device = next(p.device for _, p in self._lora)
        self.head = ValueHead(peft_model.config.hidden_size, seed).to(device)

    def _restore_grad(self) -> None:
        for _, p in self._lora:
            p.requires_grad_(True)

    refresh = _restore_grad

    @contextlib.contextmanager
    def body_context(self) -> Iterator[None]:
        """The critic adapter active for the forward and its backward (a checkpointed layer recomputes
        under whichever adapter is active); the policy's again afterwards (both trainable)."""
        previous = self.model.active_adapter
        self.model.set_adapter(ADAPTER)
        try:
            yield
        finally:
            self.model.set_adapter(previous)  # makes the policy adapter trainable again, freezes ours
            self._restore_grad()

    def body(self) -> nn.Module:
        return _body(self.model.get_base_model())

    def trainable(self) -> list[tuple[str, nn.Parameter]]:
        return self._lora + [(HEAD_PREFIX + n, p) for n, p in self.head.named_parameters()]

    def remove(self) -> None:
        """Drop the critic adapter from the policy model (before saving and evaluating it)."""
        if ADAPTER in self.model.peft_config:
            self.model.delete_adapter(ADAPTER)


class FullCritic(Critic):
    """A separate, fully trainable causal LM body plus a value head."""

    def __init__(self, causal_lm: nn.Module, seed: int, device: torch.device):
        self.model = causal_lm.to(device)
        self.model.train()
        for p in self.model.parameters():
            p.requires_grad_(True)
        self.head = ValueHead(causal_lm.config.hidden_size, seed).to(device)

    def body(self) -> nn.Module:
        return _body(self.model)

    def trainable(self) -> list[tuple[str, nn.Parameter]]:
        return ([(n, p) for n, p in _body(self.model).named_parameters()]
                + [(HEAD_PREFIX + n, p) for n, p in self.head.named_parameters()])

    def remove(self) -> None:
        self.model = None
