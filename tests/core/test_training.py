"""Token-level GRPO engine: advantages by hand, LoRA updates, per-token signal, resume."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from factrl.harness.training.advantages import token_advantages
from factrl.harness.training.args import batch_geometry
from factrl.harness.core.errors import ConfigError
from tests.core.toy_training import train_toy
from tests.helpers import REPO


def test_token_advantages_match_hand_computation():
    # Two questions x G=2. Question 1: R_bar = 1 and 3 -> mu 2, unbiased std sqrt(2).
    returns = [[0.0, 2.0], [3.0, 3.0, 3.0], [1.0], [1.0, 1.0]]
    adv, stats = token_advantages(returns, 2, width=3, eps=0.0)
    s = math.sqrt(2.0)
    expected_q1 = [[(0 - 2) / s, (2 - 2) / s, 0.0], [(3 - 2) / s] * 3]
    assert torch.allclose(adv[:2], torch.tensor(expected_q1), atol=1e-6)
    # Question 2: identical means -> std 0 -> offsets are exactly 0 here.
    assert torch.equal(adv[2:], torch.zeros(2, 3))
    assert stats.frac_zero_std == 0.5


def test_advantages_have_no_std_floor_by_default_and_the_floor_is_a_named_option():
    # The released codes divide by std + eps with no floor (TRL v0.23.0 grpo_trainer.py:1464, the
    # CorVer trainer, verl core_algos.py:151), and so does the default; the floor is an option.
    from factrl.harness.engine.config import compose
    from factrl.harness.training.advantages import advantages_component

    train = compose([]).train
    assert train.advantage_std_floor == 0.0 and "std_floor" not in train
    entry = advantages_component(train)
    assert entry["stand_in"] is False and entry["advantage_std_floor"] == 0.0
    # Equal means (1.0) but different token returns: without a floor the offsets are divided by
    # eps (the 1e3-1e4 blow-up docs/PROTOCOL.md §3 describes); a floor of 0.1 bounds them.
    returns = [[0.0, 2.0], [1.0, 1.0]]
    released, stats = token_advantages(returns, 2, eps=1e-4, std_floor=train.advantage_std_floor)
    assert released[0, 0].item() == pytest.approx(-1e4, rel=1e-3)
    guarded, stats = token_advantages(returns, 2, eps=1e-4, std_floor=0.1)
    assert guarded[0, 0].item() == pytest.approx(-1.0 / (0.1 + 1e-4), rel=1e-6)
    assert stats.frac_zero_std == 1.0
    # A group with a real disagreement (s >= floor) is untouched by the floor.
    spread = [[3.0, 3.0], [0.0, 0.0]]
    assert torch.equal(token_advantages(spread, 2, std_floor=0.1)[0], token_advantages(spread, 2)[0])
    # A run that uses the floor records it as a stand-in, so tables mark the row.
    floored = advantages_component(compose(["train.advantage_std_floor=0.1"]).train)
    assert floored["stand_in"] is True and "no floor" in floored["note"] and floored["advantage_std_floor"] == 0.1
    with pytest.raises(ConfigError, match="train.advantage_std_floor=-1.0"):
        advantages_component(compose(["train.advantage_std_floor=-1"]).train)


def test_no_signal_completion_is_left_out_of_its_group():
    adv, _ = token_advantages([[1.0], [3.0], None], 3, eps=0.0)
    assert adv[2].abs().sum() == 0
    assert adv[0, 0].item() == pytest.approx(-1 / math.sqrt(2))


def test_dataset_prompts_carry_demonstration_and_response_prefix():
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.core.prompts import DEMONSTRATION
    from factrl.harness.training.engine import build_dataset

    cfg = compose(["model=tiny-llama"])
    tokenizer = models.load_tokenizer(models.resolve(cfg.model), cfg.model)
    row = {"id": "1", "question": "Who?", "answers": ["Me"], "title": ""}
    chat = build_dataset([row], cfg.model, tokenizer=tokenizer)[0]["prompt"]
    assert [m["role"] for m in chat] == ["system", "user"] and chat[-1]["content"] == "Who?"
    cfg.model.demonstration = True
    cfg.model.response_prefix = "<think>"
    text = build_dataset([row], cfg.model, tokenizer=tokenizer)[0]["prompt"]
    assert isinstance(text, str) and text.endswith("[/INST]<think>")
    assert DEMONSTRATION[1]["content"] in text and not text.startswith(tokenizer.bos_token)


def test_batch_geometry_validates():
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"questions_per_step": 3, "completions_per_question": 16, "micro_batch_size": 8})
    assert batch_geometry(cfg) == {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 6,
                                   "generation_batch_size": 48, "num_generations": 16}
    with pytest.raises(ConfigError, match="micro_batch_size"):
        batch_geometry(OmegaConf.create({"questions_per_step": 3, "completions_per_question": 16,
                                         "micro_batch_size": 5}))


def _adapter_weights(adapter_dir):
    return load_file(str(adapter_dir / "adapter_model.safetensors"))


def test_two_step_run_changes_every_lora_b_weight(tmp_path):
    adapter = train_toy(tmp_path / "run", ["train.learning_rate=1e-2"])
    weights = _adapter_weights(adapter)
    lora_b = {k: v for k, v in weights.items() if "lora_B" in k}
    assert lora_b and all(v.abs().sum() > 0 for v in lora_b.values()), "a LoRA B matrix stayed at its zero init"
    log = [json.loads(line) for line in (tmp_path / "run" / "train" / "log.jsonl").read_text().splitlines()]
    keys = set().union(*log)
    assert {"rewards/toy/mean", "rewards/toy/mean_first_token", "advantages/max_abs", "kl"} <= keys
    records = [json.loads(x) for x in (tmp_path / "run" / "train" / "reward_records.jsonl").read_text().splitlines()]
    assert len(records) == 2 * 2 * 2  # steps x questions x completions
    # Through the real TRL sampler: completions come in groups of G of one question, and each
    # reward call sees that question's own prompt and row (never the first question's).
    for start in range(0, len(records), 2):
        group = records[start:start + 2]
        assert len({r["question"] for r in group}) == 1
        assert all(r["question"] in r["prompt"] for r in group)
    assert len({r["question"] for r in records if r["step"] == 1}) == 2
    timings = json.loads((tmp_path / "run" / "timings.json").read_text())
    assert timings["phases"]["rollout"]["seconds"] > 0 and timings["phases"]["reward"]["calls"] == 2


def test_per_token_advantages_reach_the_loss(tmp_path):
    """Two return patterns with equal per-completion means: sequence-level GRPO cannot tell them
    apart; the token-level loss must give different gradients."""
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.args import grpo_args, lora_config
    from factrl.harness.training.grpo import TokenGRPOTrainer
    from tests.core.toy_training import Toy

    cfg = compose(["model=tiny-llama", "train.beta=0.0"])
    identity = models.resolve(cfg.model)
    tokenizer = models.load_tokenizer(identity, cfg.model)
    dataset = build_dataset(load_pool(cfg.pool)[:4], cfg.model)
    trainer = TokenGRPOTrainer(model=models.load_model(identity, cfg.model), args=grpo_args(cfg, tmp_path),
                               train_dataset=dataset, processing_class=tokenizer, peft_config=lora_config(cfg.lora),
                               method_reward=Toy(cfg.method).build_reward(None), reward_name="toy")
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop, which this test bypasses
    batch = trainer._generate_and_score_completions([dataset[0], dataset[0], dataset[1], dataset[1]])
    assert batch["advantages"].shape == batch["completion_ids"].shape  # (B, T)
    lengths = batch["completion_mask"].sum(dim=1).long().tolist()

    def grads_for(returns):
        batch["advantages"] = token_advantages(returns, 2, width=batch["completion_ids"].size(1))[0]
        trainer.model.zero_grad()
        trainer.compute_loss(trainer.model, batch).backward()
        return torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None])

    # Per completion: a constant return m, or the same mean m spread unevenly over its tokens
    # (m - 0.5, m + 0.5, ...; an odd last token keeps m). Means differ across completions so
    # each group has a non-zero std.
    means = [0.5 + (b % 2) for b in range(len(lengths))]
    flat = [[m] * n for m, n in zip(means, lengths)]
    split = [[m if (t == n - 1 and n % 2) else m + (0.5 if t % 2 else -0.5) for t in range(n)]
             for m, n in zip(means, lengths)]
    for f, s in zip(flat, split):
        assert sum(f) / len(f) == pytest.approx(sum(s) / len(s))
    g_flat, g_split = grads_for(flat), grads_for(split)
    assert g_flat.abs().sum() > 0 and g_split.abs().sum() > 0
    assert not torch.allclose(g_flat, g_split)


def test_killed_run_resumes_with_same_data_order_and_weights(tmp_path):
    # Killed after step 3 with the last checkpoint at step 2: step 3 was logged and rewarded
    # before the kill and is trained again on resume (the auditor's 1, 2, 3, 3, 4 case).
    overrides = ["train.learning_rate=1e-2", "train.steps=4", "train.save_steps=2"]
    train_toy(tmp_path / "straight", overrides)

    env = {**os.environ, "HARNESS_KILL_AT_STEP": "3", "PYTHONPATH": str(REPO)}
    script = [sys.executable, "-m", "tests.core.toy_training", str(tmp_path / "killed"), *overrides]
    killed = subprocess.run(script, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert killed.returncode == 137, killed.stderr[-2000:]
    assert (tmp_path / "killed" / "train" / "checkpoint-2").is_dir()
    assert not (tmp_path / "killed" / "train" / "checkpoint-3").exists()
    assert not (tmp_path / "killed" / "train" / "adapter").exists()
    assert 3 in {json.loads(x)["step"] for x in (tmp_path / "killed" / "train" / "log.jsonl").read_text().splitlines()}
    env.pop("HARNESS_KILL_AT_STEP")
    resumed = subprocess.run(script, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]

    def questions_by_step(run):
        rows = [json.loads(x) for x in (tmp_path / run / "train" / "reward_records.jsonl").read_text().splitlines()]
        return {step: sorted(r["question"] for r in rows if r["step"] == step) for step in (1, 2, 3, 4)}

    assert questions_by_step("killed") == questions_by_step("straight")
    # Each step once, in order, in both logs (TRL's end-of-training summary shares the last step).
    train_dir = tmp_path / "killed" / "train"
    logged = [json.loads(x) for x in (train_dir / "log.jsonl").read_text().splitlines()]
    steps = [entry["step"] for entry in logged if "train_runtime" not in entry]
    assert steps == [1, 2, 3, 4]
    records = [json.loads(x)["step"] for x in (train_dir / "reward_records.jsonl").read_text().splitlines()]
    assert records == sorted(records) and [records.count(s) for s in (1, 2, 3, 4)] == [4, 4, 4, 4]
    a = _adapter_weights(tmp_path / "straight" / "train" / "adapter")
    b = _adapter_weights(tmp_path / "killed" / "train" / "adapter")
    assert a.keys() == b.keys()
    for key in a:
        assert torch.allclose(a[key], b[key], atol=1e-6), key
    timings = json.loads((tmp_path / "killed" / "timings.json").read_text())
    assert len(timings["segments"]) == 2  # both attempts are counted


def test_truncate_jsonl_keeps_steps_up_to_the_checkpoint(tmp_path):
    from factrl.harness.training.grpo import checkpoint_step, truncate_jsonl

    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"step": s, "loss": 0.1}) + "\n" for s in (1, 2, 3)) + '{"step": 4, "lo')
    assert truncate_jsonl(log, 2) == 2  # step 3 and the line cut by the kill
    assert [json.loads(x)["step"] for x in log.read_text().splitlines()] == [1, 2]
    assert truncate_jsonl(log, 2) == 0 and truncate_jsonl(tmp_path / "absent.jsonl", 0) == 0
    (tmp_path / "checkpoint-7").mkdir()
    assert checkpoint_step(tmp_path / "checkpoint-7") == 7 and checkpoint_step(None) == 0


def _vllm_and_cuda() -> str | None:
    """Why the vLLM rollout path cannot run here, or None when it can."""
    import importlib.util

    if not torch.cuda.is_available():
        return "vLLM rollouts need a CUDA GPU; this machine has none"
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (pip install 'factrl-harness[gpu]')"
    return None


@pytest.mark.gpu
@pytest.mark.skipif(_vllm_and_cuda() is not None, reason=str(_vllm_and_cuda()))
def test_vllm_rollouts_train_two_steps_on_gpu(tmp_path):
    """train.use_vllm=true: TRL's colocated vLLM engine generates the rollouts (GPU only)."""
    adapter = train_toy(tmp_path / "run", ["train.use_vllm=true", "train.vllm.gpu_memory_utilization=0.2",
                                           "train.learning_rate=1e-2"])
    lora_b = {k: v for k, v in _adapter_weights(adapter).items() if "lora_B" in k}
    assert lora_b and all(v.abs().sum() > 0 for v in lora_b.values())
