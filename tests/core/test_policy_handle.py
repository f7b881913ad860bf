"""Policy access inside a reward (method interface version 2): PolicyHandle on the real
tiny Llama with a real PEFT LoRA, and the GRPO trainer's wiring (policy passed to the reward,
frozen copies kept out of the optimizer, mixed at checkpoints, saved beside them, restored on
resume)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from factrl.harness.core.method import INTERFACE_VERSION, Method
from factrl.harness.training.policy import POLICY_ADAPTERS_DIR, PolicyHandle
from tests.helpers import REPO, harness


@pytest.fixture(scope="module")
def tiny():
    """The tiny Llama and its tokenizer as the trainer loads them (fresh model per test: see `handle`)."""
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose

    cfg = compose(["model=tiny-llama"])
    identity = models.resolve(cfg.model)
    return cfg, identity, models.load_tokenizer(identity, cfg.model)


@pytest.fixture
def handle(tiny):
    """A PolicyHandle over a LoRA whose B weights are random, so the adapter changes the logits."""
    from peft import get_peft_model

    from factrl.harness.services import models
    from factrl.harness.training.args import lora_config

    cfg, identity, tokenizer = tiny
    torch.manual_seed(0)
    model = get_peft_model(models.load_model(identity, cfg.model), lora_config(cfg.lora))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    return PolicyHandle(model, tokenizer)


def _direct(model, context, target):
    """log p(target | context) by one unpadded forward of the sequence alone."""
    ids = torch.tensor([list(context) + list(target)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float().log_softmax(-1)
    n = len(context)
    return torch.stack([logits[n - 1 + i, tok] for i, tok in enumerate(target)])


CONTEXTS = [[1, 450, 4996, 338], [1, 29871], [1, 3750, 756, 263, 1243, 310, 278, 1494, 29889]]
TARGETS = [[529, 12011, 29958], [3869, 1338, 829, 22550, 29958, 29871], [13]]


def test_interface_version_and_the_hooks_defaults():
    assert INTERFACE_VERSION == 7  # 2: policy access; 3: settings; 4: kl_reference_adapter; 5: prompt_addition; 6: layer folders; 7: format_warmup
    assert Method.needs_policy is False and Method.whole_groups is False and Method.kl_reference_adapter is None


def test_target_logprobs_equal_direct_forward_of_same_model_and_adapter(handle):
    model = handle.model
    model.eval()
    got = handle.target_logprobs(CONTEXTS, TARGETS)
    for ctx, tgt, values in zip(CONTEXTS, TARGETS, got):
        assert values.dtype == torch.float32 and values.device.type == "cpu" and values.shape == (len(tgt),)
        assert torch.allclose(values, _direct(model, ctx, tgt), atol=1e-4), (ctx, tgt)
    # Chunked passes give the same numbers; the adapter matters (without it they differ).
    chunked = handle.target_logprobs(CONTEXTS, TARGETS, batch_size=1)
    assert all(torch.allclose(a, b, atol=1e-4) for a, b in zip(got, chunked))
    with model.disable_adapter():
        base = [_direct(model, c, t) for c, t in zip(CONTEXTS, TARGETS)]
    assert not all(torch.allclose(a, b, atol=1e-3) for a, b in zip(got, base))


def test_copy_is_frozen_scored_on_its_own_and_state_is_restored(handle):
    model = handle.model
    before = handle.target_logprobs(CONTEXTS, TARGETS)
    handle.copy_adapter("proxy")
    copy_params = [p for n, p in model.named_parameters() if ".proxy." in n]
    assert copy_params and not any(p.requires_grad for p in copy_params)
    trained = [p for n, p in model.named_parameters() if ".default." in n]
    assert all(p.requires_grad for p in trained)
    with torch.no_grad():  # the policy moves on; the copy must not
        for p in trained:
            p.add_(0.3)
    model.train()
    of_copy = handle.target_logprobs(CONTEXTS, TARGETS, adapter="proxy")
    assert all(torch.allclose(a, b, atol=1e-4) for a, b in zip(of_copy, before))
    moved = handle.target_logprobs(CONTEXTS, TARGETS)
    assert not all(torch.allclose(a, b, atol=1e-3) for a, b in zip(moved, before))
    assert model.training and model.active_adapter == "default"
    assert all(p.requires_grad for p in trained) and not any(p.requires_grad for p in copy_params)
    # Restored on error too: an out-of-vocabulary target id fails inside the pass.
    with pytest.raises((IndexError, RuntimeError)):
        handle.target_logprobs([[1, 2]], [[10 ** 9]], adapter="proxy")
    assert model.training and model.active_adapter == "default"
    assert all(p.requires_grad for p in trained) and not any(p.requires_grad for p in copy_params)
    with pytest.raises(ValueError, match="no adapter named 'nope'"):
        handle.target_logprobs(CONTEXTS, TARGETS, adapter="nope")
    with pytest.raises(ValueError, match="context 0 is empty"):
        handle.target_logprobs([[]], [[5]])


def test_mix_adapter_arithmetic_and_copies_round_trip(handle, tmp_path):
    handle.copy_adapter("proxy")
    policy = dict(handle._adapter_params("default"))
    proxy = dict(handle._adapter_params("proxy"))
    with torch.no_grad():
        for i, key in enumerate(sorted(policy)):
            policy[key].fill_(1.0 + i)
            proxy[key].fill_(-2.0)
    handle.mix_adapter("proxy", keep=0.9)
    for i, key in enumerate(sorted(policy)):
        expected = 0.9 * -2.0 + 0.1 * (1.0 + i)
        assert torch.allclose(proxy[key], torch.full_like(proxy[key], expected), atol=1e-6), key
        assert torch.all(policy[key] == 1.0 + i)  # the source is unchanged
    saved = handle.state_of("proxy")
    handle.save_copies(tmp_path / POLICY_ADAPTERS_DIR)
    with torch.no_grad():
        for p in proxy.values():
            p.zero_()
    assert handle.load_copies(tmp_path / POLICY_ADAPTERS_DIR) == ["proxy"]
    assert all(torch.equal(saved[k], v) for k, v in handle.state_of("proxy").items())
    with pytest.raises(ValueError, match="keep"):
        handle.mix_adapter("proxy", keep=1.5)


def test_trainer_passes_the_policy_and_keeps_copies_out_of_the_optimizer(tiny, tmp_path):
    from factrl.harness.services import models
    from factrl.harness.pool import load_pool
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.args import grpo_args, lora_config
    from factrl.harness.training.grpo import TokenGRPOTrainer
    from tests.core.toy_policy_training import COPY, PolicyToy

    cfg, identity, tokenizer = tiny
    method = PolicyToy(cfg.method)
    trainer = TokenGRPOTrainer(model=models.load_model(identity, cfg.model), args=grpo_args(cfg, tmp_path),
                               train_dataset=build_dataset(load_pool(cfg.pool)[:4], cfg.model),
                               processing_class=tokenizer, peft_config=lora_config(cfg.lora),
                               method_reward=method.build_reward(None), reward_name="policytoy", method=method)
    policy = trainer._token_reward.policy
    assert isinstance(policy, PolicyHandle) and policy.copies == [COPY]
    optimizer = trainer.create_optimizer()
    in_optimizer = {id(p) for group in optimizer.param_groups for p in group["params"]}
    copies = [p for n, p in policy.model.named_parameters() if f".{COPY}." in n]
    trained = [p for n, p in policy.model.named_parameters() if f".{policy.adapter_name}." in n]
    assert copies and not any(id(p) in in_optimizer for p in copies)
    assert trained and all(id(p) in in_optimizer for p in trained)


def test_plain_methods_get_policy_none(tiny, tmp_path):
    from factrl.harness.services import models
    from factrl.harness.pool import load_pool
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.args import grpo_args, lora_config
    from factrl.harness.training.grpo import TokenGRPOTrainer
    from tests.core.toy_training import Toy

    cfg, identity, tokenizer = tiny
    trainer = TokenGRPOTrainer(model=models.load_model(identity, cfg.model), args=grpo_args(cfg, tmp_path),
                               train_dataset=build_dataset(load_pool(cfg.pool)[:4], cfg.model),
                               processing_class=tokenizer, peft_config=lora_config(cfg.lora),
                               method_reward=Toy(cfg.method).build_reward(None), reward_name="toy", method=Toy())
    assert trainer._token_reward.policy is None and trainer._policy is None


def _records(run_dir):
    lines = (run_dir / "train" / "reward_records.jsonl").read_text().splitlines()
    return {json.loads(x)["step"]: json.loads(x) for x in lines}


@pytest.mark.slow  # 24 s on the idle 2-core machine (60 s loaded): one run in-process, one killed and resumed
def test_copies_are_mixed_at_checkpoints_saved_beside_them_and_restored_on_resume(tmp_path):
    """Straight 2-step run vs one killed after step 1's checkpoint and resumed: the copy the
    reward reads at step 2 is the mixed one in both (a fresh copy would read as at step 1)."""
    from tests.core.toy_policy_training import train_policy_toy

    script = [sys.executable, "-m", "tests.core.toy_policy_training"]
    overrides = ["train.learning_rate=1e-2", "train.steps=2", "train.save_steps=1", "train.warmup_ratio=0"]  # warmup: LR 0 at step 1
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    train_policy_toy(tmp_path / "straight", overrides)
    killed_dir = tmp_path / "killed"
    killed = subprocess.run([*script, str(killed_dir), *overrides], cwd=REPO,
                            env={**env, "HARNESS_KILL_AT_STEP": "1"}, capture_output=True, text=True, timeout=600)
    assert killed.returncode == 137, killed.stderr[-2000:]
    ckpt = killed_dir / "train" / "checkpoint-1"
    assert (ckpt / POLICY_ADAPTERS_DIR / "snap" / "adapter.safetensors").is_file()
    assert not (ckpt / "snap").exists()  # the checkpoint root holds the trained adapter alone
    resumed = subprocess.run([*script, str(killed_dir), *overrides], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    a, b = _records(tmp_path / "straight"), _records(killed_dir)
    assert a[1]["copy_b_abs_sum"] == 0.0  # the copy of a fresh LoRA (B = 0)
    assert a[2]["copy_b_abs_sum"] > 0.0  # mixed with the trained adapter at checkpoint 1
    assert b[2]["copy_b_abs_sum"] == pytest.approx(a[2]["copy_b_abs_sum"], rel=1e-6)
    assert b[2]["copy_logprob"] == pytest.approx(a[2]["copy_logprob"], abs=1e-5)
    assert not (killed_dir / "train" / "adapter" / "snap").exists()  # the final adapter: the policy's only


def test_harness_methods_prints_the_interface_version():
    result = harness("methods")
    assert result.returncode == 0, result.stderr
    assert f"method interface version {INTERFACE_VERSION}" in result.stdout
