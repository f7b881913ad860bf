"""Rollout sampling penalties (harness/training/sampling.py): the presence penalty's definition,
its place before top-k in real HF rollouts, the vLLM mapping, and the settings' errors."""
from __future__ import annotations

import pytest
import torch

from factrl.harness.engine.config import compose
from factrl.harness.core.errors import ConfigError
from factrl.harness.training.args import grpo_args
from factrl.harness.training.sampling import PresencePenalty, presence_penalty_generate, sampling_settings


def test_presence_penalty_is_vllms_definition():
    # vLLM SamplingParams: "presence_penalty: Float that penalizes new tokens based on whether they
    # appear in the generated text so far"; the OpenAI API writes it as
    # mu[j] -> mu[j] - float(c[j] > 0) * alpha_presence, c[j] = count of token j in the output so far.
    vocab, penalty = 8, 1.5
    scores = torch.arange(2 * vocab, dtype=torch.float32).view(2, vocab)
    prompt = torch.tensor([[0, 7, 7], [1, 2, 6]])
    processor = PresencePenalty(penalty)
    assert torch.equal(processor(prompt, scores.clone()), scores)  # nothing generated yet; prompts never count
    generated = torch.tensor([[3, 3, 5], [6, 6, 6]])
    got = processor(torch.cat([prompt, generated], dim=1), scores.clone())
    expected = scores.clone()
    for row, tokens in enumerate(generated.tolist()):
        for j in range(vocab):
            count = tokens.count(j)
            expected[row, j] -= float(count > 0) * penalty  # once, however often the token occurs
    assert torch.equal(got, expected)
    assert got[0, 7] == scores[0, 7]  # a prompt-only token is not penalised


def test_presence_penalty_acts_before_top_k_in_real_rollouts(tmp_path):
    """top-k 1 (the argmax) and a penalty far larger than any logit gap. The tiny random model's
    argmax loops within 64 tokens, so plain rollouts repeat tokens. If the penalty acts before top-k (vLLM's order:
    penalties, then temperature, then top-k / top-p), the argmax is taken among unseen tokens and
    no completion repeats one; applied after top-k it could not change the one token left."""
    from factrl.harness.services import models
    from factrl.harness.pool import load_pool
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.args import lora_config
    from factrl.harness.training.grpo import TokenGRPOTrainer
    from tests.core.toy_training import Toy

    cfg = compose(["model=tiny-llama", "train.top_k=1", "train.max_completion_length=64", "train.optim=adamw_torch"])
    identity = models.resolve(cfg.model)
    tokenizer = models.load_tokenizer(identity, cfg.model)
    dataset = build_dataset(load_pool(cfg.pool)[:2], cfg.model)

    def completions(penalty: float) -> list[list[int]]:
        trainer = TokenGRPOTrainer(model=models.load_model(identity, cfg.model), args=grpo_args(cfg, tmp_path),
                                   train_dataset=dataset, processing_class=tokenizer,
                                   peft_config=lora_config(cfg.lora), method_reward=Toy(cfg.method).build_reward(None),
                                   reward_name="toy", presence_penalty=penalty)
        batch = trainer._generate_and_score_completions([dataset[0], dataset[0], dataset[1], dataset[1]])
        model = trainer.accelerator.unwrap_model(trainer.model_wrapped)
        assert "generate" not in vars(model)  # the processor is gone after the rollout (evaluation decodes without)
        ids, mask = batch["completion_ids"].tolist(), batch["completion_mask"].tolist()
        return [[t for t, m in zip(row, keep) if m] for row, keep in zip(ids, mask)]

    penalised = [c for c in completions(1e4) if len(c) > 40]
    plain = [c for c in completions(0.0) if len(c) > 40]
    assert penalised and plain
    assert all(len(set(c)) == len(c) for c in penalised), penalised
    assert all(len(set(c)) < len(c) for c in plain), plain


def test_presence_penalty_wrapper_leaves_the_model_as_it_was():
    class Model:
        def generate(self, **kwargs):
            return kwargs.get("logits_processor")

    model = Model()
    with presence_penalty_generate(model, 1.5):
        processors = model.generate(input_ids=None)
        assert [type(p) for p in processors] == [PresencePenalty] and processors[0].penalty == 1.5
        assert model.generate(input_ids=None)[0] is not processors[0]  # a fresh one per generate call
    assert "generate" not in vars(model) and model.generate() is None
    with presence_penalty_generate(model, 0.0):
        assert "generate" not in vars(model)  # 0 = off: nothing attached


def test_rollout_sampling_settings_reach_trl_and_vllm(tmp_path):
    author_key = ["experiment=rlfh-author-key", "model=tiny-llama"]
    hf = grpo_args(compose(author_key), tmp_path)
    assert (hf.top_k, hf.top_p, hf.temperature, hf.repetition_penalty) == (20, 0.9, 1.0, 1.0)
    assert hf.generation_kwargs is None  # HF rollouts: the trainer's logits processor carries it
    vllm = grpo_args(compose([*author_key, "train.use_vllm=true"]), tmp_path)
    assert vllm.generation_kwargs == {"presence_penalty": 1.5}  # vLLM SamplingParams' own field
    default = grpo_args(compose(["model=tiny-llama"]), tmp_path)
    assert (default.top_k, default.repetition_penalty, default.generation_kwargs) == (0, 1.0, None)
    assert sampling_settings(compose(author_key).train)["presence_penalty"] == 1.5


@pytest.mark.parametrize("override, message", [
    ("train.top_k=-1", "train.top_k=-1"),
    ("train.presence_penalty=2.5", r"train.presence_penalty=2.5: must be in \[-2, 2\]"),
    ("train.repetition_penalty=0", "train.repetition_penalty=0.0"),
])
def test_bad_sampling_settings_are_one_line_errors(override, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        grpo_args(compose(["model=tiny-llama", override]), tmp_path)
