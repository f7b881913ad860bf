"""The LoRA critic's gradients do not depend on gradient checkpointing.

With `train.gradient_checkpointing=true` the decoder layers recompute their forward during the
backward. The critic's value loss must therefore be back-propagated while the critic adapter is
still active: recomputed under the policy adapter, the saved activations belong to another
network and the critic's gradients come out wrong (up to 1.4 against a largest gradient of 1.7
on a 2-layer Llama, before the fix). The real PPOTrainer on tiny-llama runs its own value step
twice on one batch, with and without checkpointing; the gradients must be equal.
"""
from __future__ import annotations

import torch

from tests.ppo.test_ppo_engine import _trainer


def _critic_grads(trainer, batch) -> list[torch.Tensor]:
    for p in trainer.critic.parameters():
        p.grad = None
    trainer._value_inputs = batch
    trainer.value_step()  # forward, clipped value loss and backward, as training_step runs it
    grads = [p.grad for p in trainer.critic.parameters()]
    assert all(g is not None for g in grads), "a critic parameter got no gradient"
    return [g.detach().clone() for g in grads]


def test_critic_gradients_are_the_same_with_and_without_gradient_checkpointing(tmp_path):
    trainer, dataset = _trainer(tmp_path, ["train.gradient_checkpointing=true", "lora.r=4", "lora.alpha=8",
                                           "lora.dropout=0.0"])
    peft_model = trainer.accelerator.unwrap_model(trainer.model)
    base = peft_model.get_base_model()
    # What Trainer.train() does for train.gradient_checkpointing=true (TRL's default kwargs).
    base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    assert base.is_gradient_checkpointing
    # Two different adapters: LoRA B starts at zero, which would make the policy and the critic
    # bodies identical and hide which adapter a recompute used.
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * (0.5 if ".critic." in name else -0.5))
    batch = trainer._generate_and_score_completions([dataset[0], dataset[0], dataset[1], dataset[1]])
    batch["returns"] = batch["returns"] + 1.0  # a value loss with a gradient on every valid token
    trainer.model.train()
    checkpointed = _critic_grads(trainer, batch)
    base.gradient_checkpointing_disable()
    assert not base.is_gradient_checkpointing
    plain = _critic_grads(trainer, batch)
    largest = max(float(g.abs().max()) for g in plain)
    assert largest > 0
    # Bit-level equality on the CPU; CUDA backward kernels may reorder sums, far below the bug's
    # differences (half the largest gradient).
    tolerance = (1e-6 if plain[0].device.type == "cpu" else 1e-3) * largest
    for a, b in zip(checkpointed, plain):
        assert torch.allclose(a, b, rtol=0, atol=tolerance), float((a - b).abs().max())
