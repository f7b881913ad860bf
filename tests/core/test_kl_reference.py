"""The KL reference under a method's adapter copy (Method.kl_reference_adapter, interface 4): on
the real TRL trainer with tiny-llama, the reference log-probs TRL hands to the loss are the copy's,
not the adapter-disabled base's; a bad name or a method without the policy is a one-line error."""
from __future__ import annotations

import pytest
import torch

from factrl.harness.core.errors import ConfigError
from factrl.harness.training.kl_reference import reference_adapter
from tests.core.toy_training import Toy


class ProxyToy(Toy):
    """Toy rewards; a perturbed copy of the adapter named "proxy" is the KL reference."""

    needs_policy = True
    kl_reference_adapter = "proxy"

    def setup_policy(self, policy):
        policy.copy_adapter("proxy")
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():  # so that proxy, base and policy all differ
            for name, param in policy.model.named_parameters():
                if ".proxy." in name and "lora_B" in name:
                    param.copy_(torch.randn(param.shape, generator=generator) * 0.5)


@pytest.fixture(scope="module")
def scored():
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.args import grpo_args, lora_config
    from factrl.harness.training.grpo import TokenGRPOTrainer

    cfg = compose(["model=tiny-llama", "train.beta=0.1", "train.temperature=1.0"])
    identity = models.resolve(cfg.model)
    tokenizer = models.load_tokenizer(identity, cfg.model)
    dataset = build_dataset(load_pool(cfg.pool)[:4], cfg.model)
    import tempfile

    method = ProxyToy(cfg.method)
    trainer = TokenGRPOTrainer(model=models.load_model(identity, cfg.model), args=grpo_args(cfg, tempfile.mkdtemp()),
                               train_dataset=dataset, processing_class=tokenizer, peft_config=lora_config(cfg.lora),
                               method_reward=method.build_reward(None), reward_name="toy", method=method)
    trainer.model.train()
    batch = trainer._generate_and_score_completions([dataset[0]] * 4)  # one prompt: no prompt padding
    return trainer, batch


def _logps_under(trainer, batch, adapter):
    """Teacher-forced log-probs of each completion under `adapter` ("proxy", None = the trained
    one) or, for "base", with every adapter disabled."""
    policy = trainer._policy
    contexts = [row[mask.bool()].tolist() for row, mask in zip(batch["prompt_ids"], batch["prompt_mask"])]
    targets = [row[mask.bool()].tolist() for row, mask in zip(batch["completion_ids"], batch["completion_mask"])]
    if adapter != "base":
        return policy.target_logprobs(contexts, targets, adapter=adapter)
    with policy.model.disable_adapter():
        return policy.target_logprobs(contexts, targets)


def test_reference_logprobs_come_from_the_named_copy(scored):
    trainer, batch = scored
    assert trainer._kl_adapter == "proxy"
    ref = batch["ref_per_token_logps"].cpu()
    mask = batch["completion_mask"].cpu().bool()
    proxy, base = _logps_under(trainer, batch, "proxy"), _logps_under(trainer, batch, "base")
    for b in range(ref.size(0)):
        assert ref[b][mask[b]].tolist() == pytest.approx(proxy[b].tolist(), abs=1e-4)
    gap = max(float((ref[b][mask[b]] - base[b]).abs().max()) for b in range(ref.size(0)))
    assert gap > 1e-2  # the base model (TRL's PEFT default) would give other numbers
    # The scope is gone after the batch: TRL's own helper is back, every flag as before.
    import trl.trainer.grpo_trainer as trl_grpo
    from trl.trainer.utils import use_adapter

    assert trl_grpo.use_adapter is use_adapter
    assert trainer.model.active_adapter == "default"
    assert not any(p.requires_grad for n, p in trainer.model.named_parameters() if ".proxy." in n)


def test_a_bad_name_or_no_policy_is_a_one_line_error(scored):
    trainer, _ = scored

    class Named(ProxyToy):
        kl_reference_adapter = "nowhere"

    with pytest.raises(ConfigError, match="kl_reference_adapter='nowhere' is not one of the adapter copies"):
        reference_adapter(Named(), trainer._policy, 0.1)
    with pytest.raises(ConfigError, match="needs needs_policy"):
        reference_adapter(ProxyToy(), None, 0.1)
    assert reference_adapter(ProxyToy(), trainer._policy, 0.0) is None  # no KL term: no reference
    assert reference_adapter(Toy(), trainer._policy, 0.1) is None  # the default: the base model
