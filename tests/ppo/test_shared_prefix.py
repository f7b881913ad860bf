"""The PPO engine's shared-prefix forward (harness/training/shared_prefix.py) against the plain
forward over whole rows, on tiny-llama with the real PPOTrainer.

Rows of one question share their prompt, so the engine runs each distinct prompt once and the
completions on its key/value cache. The log-probs, entropies, values, the policy loss and the
gradients of both adapters must equal the plain forward's up to float rounding: the attention
runs in two blocks, nothing else changes. Tolerance: 1e-5 absolute on log-probs and values
(|values| ~ 1) and 1e-5 x the largest gradient on gradients (fp32 on the CPU; measured
differences are ~1e-7). A batch whose prompts are all distinct must take the plain path, bit for bit.
"""
from __future__ import annotations

import torch

from factrl.harness.training.shared_prefix import prompt_groups
from tests.ppo.test_ppo_engine import _trainer

ATOL = 1e-5


def _apart(trainer) -> None:
    """Random LoRA B for both adapters (B = 0 would make policy, critic and reference one network)."""
    peft_model = trainer.accelerator.unwrap_model(trainer.model)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * (0.5 if ".critic." in name else -0.5))


def _shapes(trainer) -> list[tuple[int, ...]]:
    """Records the (rows, positions) of every forward through the shared embedding table."""
    seen: list[tuple[int, ...]] = []
    embed = trainer.accelerator.unwrap_model(trainer.model).get_base_model().get_input_embeddings()
    embed.register_forward_hook(lambda _m, args, _out: seen.append(tuple(args[0].shape)))
    return seen


def _grads(params) -> list[torch.Tensor]:
    return [p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p) for p in params]


def _close_grads(a: list[torch.Tensor], b: list[torch.Tensor]) -> None:
    largest = max(float(g.abs().max()) for g in b)
    assert largest > 0
    for x, y in zip(a, b):
        assert torch.allclose(x, y, rtol=0, atol=ATOL * largest), float((x - y).abs().max())


def _setup(tmp_path, rows):
    trainer, dataset = _trainer(tmp_path)
    _apart(trainer)
    batch = trainer._generate_and_score_completions([dataset[i] for i in rows])
    trainer.model.train()
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    return trainer, batch, ids, mask, batch["completion_ids"].size(1)


def test_prompt_groups_finds_rows_with_equal_prompts():
    ids = torch.tensor([[0, 5, 6, 1, 2], [0, 5, 6, 3, 4], [7, 8, 9, 1, 2], [0, 5, 6, 9, 9]])
    mask = torch.ones_like(ids)
    first, inverse = prompt_groups(ids, mask, width=2)
    assert inverse.tolist()[0] == inverse.tolist()[1] == inverse.tolist()[3] != inverse.tolist()[2]
    assert sorted(first.tolist()) == [0, 2] and all(int(first[inverse[b]]) <= b for b in range(4))
    padded = mask.clone()
    padded[1, 0] = 0  # same ids, other padding: another prompt
    assert int(prompt_groups(ids, padded, width=2)[1].max()) == 2
    assert prompt_groups(ids[:3], mask[:3], width=2) is not None
    assert prompt_groups(ids[1:3], mask[1:3], width=2) is None  # no two rows share a prompt
    assert prompt_groups(ids, mask, width=4) is None  # a one-token prompt: nothing to share


def test_policy_log_probs_loss_and_gradients_equal_the_plain_forward(tmp_path):
    trainer, batch, ids, mask, width = _setup(tmp_path, [0, 0, 1, 1])
    seen = _shapes(trainer)
    actor = [p for n, p in trainer.model.named_parameters() if "lora_" in n and ".critic." not in n]
    got = {}
    for shared in (True, False):
        trainer.use_shared_prefix(shared)
        seen.clear()
        trainer.model.zero_grad()
        logps, entropies, _ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, width,
                                                                         compute_entropy=True)
        loss = trainer.compute_loss(trainer.model, batch)  # TRL's clipped policy loss through the override
        loss.backward()
        trainer._value_inputs = None
        got[shared] = (logps.detach(), entropies.detach(), float(loss.detach()), _grads(actor), list(seen))
    rows, length = ids.shape
    prompt = length - width
    assert got[True][4][:2] == [(2, prompt - 1), (rows, width + 1)]  # two prompts once, four completions
    assert got[False][4][:1] == [(rows, length)]
    completion = batch["completion_mask"].bool()
    assert torch.allclose(got[True][0], got[False][0], rtol=0, atol=ATOL)
    assert torch.allclose(got[True][1][completion], got[False][1][completion], rtol=0, atol=ATOL)
    assert abs(got[True][2] - got[False][2]) <= ATOL
    _close_grads(got[True][3], got[False][3])


def test_reference_and_rollout_log_probs_and_values_equal_the_plain_forward(tmp_path):
    trainer, batch, ids, mask, width = _setup(tmp_path, [0, 0, 1, 1])
    got = {}
    for shared in (True, False):
        trainer.use_shared_prefix(shared)
        with torch.no_grad():
            with trainer.accelerator.unwrap_model(trainer.model).disable_adapter():
                ref = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, width, batch_size=2)[0]
            values = trainer.critic.values(ids, mask, width, batch_size=2)  # chunks of two: one prompt each
        got[shared] = (ref, values)
    assert torch.allclose(got[True][0], got[False][0], rtol=0, atol=ATOL)
    assert torch.allclose(got[True][1], got[False][1], rtol=0, atol=ATOL)
    # The rollout's own values (computed with the shared prefix) are the plain forward's.
    assert torch.allclose(batch["old_values"], got[False][1], rtol=0, atol=ATOL)


def test_critic_value_loss_gradients_equal_the_plain_forward(tmp_path):
    trainer, batch, ids, mask, width = _setup(tmp_path, [0, 0, 1, 1])
    batch["returns"] = batch["returns"] + 1.0  # a value loss with a gradient on every valid token
    got = {}
    for shared in (True, False):
        trainer.use_shared_prefix(shared)
        for p in trainer.critic.parameters():
            p.grad = None
        trainer._value_inputs = batch
        trainer.value_step()  # forward, clipped value loss and backward, as training_step runs it
        got[shared] = (_grads(trainer.critic.parameters()), trainer._metrics["train"]["value_loss"][-1])
    _close_grads(got[True][0], got[False][0])
    assert abs(got[True][1] - got[False][1]) <= ATOL


def test_rows_without_a_shared_prompt_take_the_plain_forward_bit_for_bit(tmp_path):
    trainer, batch, ids, mask, width = _setup(tmp_path, [0, 1, 2, 3])
    assert prompt_groups(ids, mask, width) is None
    got = {}
    for shared in (True, False):
        trainer.use_shared_prefix(shared)
        with torch.no_grad():
            logps = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, width)[0]
            values = trainer.critic.values(ids, mask, width)
        got[shared] = (logps, values)
    assert torch.equal(got[True][0], got[False][0]) and torch.equal(got[True][1], got[False][1])
