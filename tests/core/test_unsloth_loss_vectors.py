"""The harness's GRPO loss against the loss CorVer's and KnowRL's releases really ran: unsloth's.

Vectors (tests/reference_vectors/, README there):
- unsloth/corver_grpo_compute_loss.json: unsloth_zoo 2026.2.1 `grpo_compute_loss` (the body of the
  `grpo_compute_loss_slow` CorVer's compute_loss calls), CorVer's settings, with and without vLLM
  sampling log-probs;
- unsloth/knowrl_efficient_grpo.json: unsloth_zoo 2025.11.4 `UnslothEfficientGRPO` (KnowRL's path),
  its DAPO settings, one chunk per row;
- corver/compute_loss_layout.json: CorVer's own compute_loss, where its (B, T) advantages land.

Each case runs the real TokenGRPOTrainer's `_compute_loss` (TRL 1.16 plus train.loss_chunks) with the
composed method's settings; only the model forward is replaced by the stored log-probs. The vLLM
cases go through the trainer's `_generate_and_score_completions` with a scripted stand-in for the
vLLM engine (vLLM cannot run here) returning the stored completions and sampling log-probs, so the
importance-sampling ratio is TRL 1.16's own, computed with the composed train.vllm.* settings.
"""
from __future__ import annotations

import json

import pytest
import torch

from factrl.harness.engine.config import compose
from tests.helpers import REPO

VECTORS = REPO / "tests" / "reference_vectors"
CORVER = json.loads((VECTORS / "unsloth" / "corver_grpo_compute_loss.json").read_text())
KNOWRL = json.loads((VECTORS / "unsloth" / "knowrl_efficient_grpo.json").read_text())
LAYOUT = json.loads((VECTORS / "corver" / "compute_loss_layout.json").read_text())


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    """One real TokenGRPOTrainer (tiny-llama, 2 questions x 2 completions = the vectors' 4 rows)."""
    from factrl.harness.services import models
    from factrl.harness.pool import load_pool
    from factrl.harness.training.args import grpo_args, lora_config
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.grpo import TokenGRPOTrainer
    from tests.core.toy_training import Toy

    cfg = compose(["model=tiny-llama", "train.optim=adamw_torch", "train.questions_per_step=2",
                   "train.completions_per_question=2", "train.max_completion_length=8"])
    identity = models.resolve(cfg.model)
    rows = load_pool(cfg.pool)[:2]
    trained = TokenGRPOTrainer(model=models.load_model(identity, cfg.model),
                               args=grpo_args(cfg, tmp_path_factory.mktemp("unsloth")),
                               train_dataset=build_dataset(rows, cfg.model),
                               processing_class=models.load_tokenizer(identity, cfg.model),
                               peft_config=lora_config(cfg.lora), method_reward=Toy(cfg.method).build_reward(None),
                               reward_name="toy")
    trained.model.train()
    trained.rows = [trained.train_dataset[i] for i in (0, 0, 1, 1)]  # TRL's order: each row C times
    return trained


def configure(trainer, overrides: list[str], *, ga: int, use_vllm: bool) -> None:
    """The composed method's loss and vLLM settings on the trainer, as grpo_args hands them to TRL
    (a second GRPOConfig would reset Accelerate's state under the trainer)."""
    from factrl.harness.training.args import clip_args
    from factrl.harness.training.optim import optimizer_args
    from factrl.harness.training.vllm_settings import vllm_args

    train = compose(["model=tiny-llama", *overrides]).train
    loss, clip, vllm = optimizer_args(train), clip_args(train), vllm_args(train)
    trainer.loss_type, trainer.beta = loss["loss_type"], float(train.beta)
    trainer.epsilon_low = clip["epsilon"]
    trainer.epsilon_high = clip["epsilon"] if clip["epsilon_high"] is None else clip["epsilon_high"]
    trainer.entropy_coef = loss["entropy_coef"]
    trainer.args.use_bias_correction_kl = bool(train.kl_bias_correction)
    trainer.args.loss_chunks = None if train.loss_chunks is None else int(train.loss_chunks)
    trainer.current_gradient_accumulation_steps = ga
    trainer.args.gradient_accumulation_steps = trainer.args.steps_per_generation = ga  # batch_geometry: spg = GA
    trainer.use_vllm = use_vllm
    trainer.vllm_importance_sampling_correction = vllm["vllm_importance_sampling_correction"]
    trainer.vllm_importance_sampling_mode = vllm["vllm_importance_sampling_mode"]
    trainer.vllm_importance_sampling_clip_max = vllm["vllm_importance_sampling_clip_max"]
    trainer.vllm_importance_sampling_clip_min = vllm["vllm_importance_sampling_clip_min"]


class StoredForward:
    """The trainer's log-prob function replaced by stored rows: a row is found by its token ids, so
    a chunk of the batch (train.loss_chunks) gets its own rows. `queue` holds what the rollout's
    passes return (old, then reference), in TRL's order; afterwards every call returns `new`."""

    def __init__(self, new: torch.Tensor, queue: list[torch.Tensor]):
        self.new, self.queue, self.rows = new, list(queue), {}

    def __call__(self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs):
        keys = [tuple(row.tolist()) for row in input_ids]
        for key in keys:
            self.rows.setdefault(key, len(self.rows))
        index = torch.tensor([self.rows[k] for k in keys])
        source = self.queue.pop(0) if self.queue else self.new
        picked = source[index]
        return picked, torch.zeros_like(picked.detach()), None


def rollout(trainer, completion_ids: list[list[int]], mask: list[list[int]], sampling: torch.Tensor,
            queue: list[torch.Tensor], new: torch.Tensor) -> dict:
    """TRL's `_generate_and_score_completions` (through the harness override) with a scripted vLLM
    engine returning the vector's completions and sampling log-probs."""
    lengths = [sum(m) for m in mask]
    ids = [row[:n] for row, n in zip(completion_ids, lengths)]
    logprobs = [[[float(v)] for v in sampling[b, :n]] for b, n in enumerate(lengths)]

    class ScriptedVLLM:  # stands in for trl.generation.vllm_generation.VLLMGeneration
        def sync_weights(self):
            pass

        def generate(self, prompts, images, num_generations, profiler):
            assert len(prompts) == len(ids)
            return None, ids, logprobs, None

    trainer.vllm_generation = ScriptedVLLM()
    trainer._last_loaded_step = trainer.state.global_step
    stub = StoredForward(new, queue)
    trainer._get_per_token_logps_and_entropies = stub
    output = trainer._generate_and_score_completions(list(trainer.rows))
    assert not stub.queue, "the rollout made fewer log-prob passes than the case expects"
    # The prompt rows the tiny tokenizer built come first in each row's key: register the rows in
    # batch order so the loss's calls map back to the same rows.
    stub.rows = {}
    stub(None, torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1), None, None)
    return output


def loss_and_grad(trainer, inputs: dict, leaf: torch.Tensor) -> tuple[float, torch.Tensor]:
    leaf.grad = None
    loss = trainer._compute_loss(trainer.model, inputs)
    loss.backward()
    return float(loss.detach()), leaf.grad.clone()


# -- CorVer: unsloth_zoo 2026.2.1 grpo_compute_loss --------------------------------------------------------

def _corver_tensors():
    x = CORVER["shared_input"]
    return ({k: torch.tensor(x[k]) for k in ("per_token_logps", "old_per_token_logps", "ref_per_token_logps",
                                               "sampling_per_token_logps", "advantages")},
            torch.tensor(x["completion_mask"]), x["completion_ids"])


def _corver_case(name: str) -> dict:
    return next(c for c in CORVER["cases"] if c["name"] == name)


@pytest.mark.parametrize("name", ["corver_as_called", "corver_without_sampling_logps", "corver_old_none",
                                  "corver_beta_0.04"])
def test_corvers_loss_is_unsloths_grpo_compute_loss(trainer, name):
    """CorVer's composed settings (grpo, KL 0.001, clip 0.2, GA 3, no vLLM correction) through the
    trainer's `_compute_loss` give the loss and gradient CorVer's call of grpo_compute_loss_slow gives."""
    case = _corver_case(name)
    i = case["input"]
    t, mask, ids = _corver_tensors()
    overrides = ["method=corver", f"train.beta={i['beta']}"]
    configure(trainer, overrides, ga=i["current_gradient_accumulation_steps"], use_vllm=False)
    assert compose(["method=corver", "model=llama-3.2-3b"]).train.vllm.importance_sampling_correction is False
    new = t["per_token_logps"].clone().requires_grad_()
    trainer._get_per_token_logps_and_entropies = StoredForward(new, [])
    ones = torch.ones(len(mask), 1, dtype=torch.long)
    inputs = {"prompt_ids": ones, "prompt_mask": ones, "completion_ids": torch.tensor(ids), "completion_mask": mask,
              "advantages": t["advantages"], "ref_per_token_logps": t["ref_per_token_logps"],
              "num_items_in_batch": torch.tensor(float(i["num_items_in_batch"]))}
    if i["old_per_token_logps_passed"]:
        inputs["old_per_token_logps"] = t["old_per_token_logps"]
    if i["sampling_per_token_logps_passed"]:
        inputs["sampling_per_token_logps"] = t["sampling_per_token_logps"]  # CorVer passes them; nothing reads them
    loss, grad = loss_and_grad(trainer, inputs, new)
    assert loss == pytest.approx(case["output"]["loss"], rel=1e-6, abs=1e-8)
    assert torch.allclose(grad, torch.tensor(case["output"]["grad_per_token_logps"]), rtol=1e-5, atol=1e-8)


def test_corver_applies_no_vllm_correction_and_sampling_logps_change_nothing():
    """What CorVer's call does with the sampling log-probs: nothing (the two cases are equal upstream)."""
    with_sampling, without = _corver_case("corver_as_called"), _corver_case("corver_without_sampling_logps")
    assert with_sampling["output"]["loss"] == without["output"]["loss"]
    assert "importance_sampling_ratio_masked" not in with_sampling["output"]
    # Told use_vllm, the same function would weigh the tokens and move the loss.
    assert _corver_case("use_vllm_cap_2")["output"]["loss"] != pytest.approx(with_sampling["output"]["loss"], rel=0.05)


@pytest.mark.parametrize("name, overrides, ga", [
    # unsloth's per-token truncation at 2.0 (the function told use_vllm) is KnowRL's composed setting
    ("use_vllm_cap_2", ["method=knowrl", "train.loss_type=grpo", "train.beta=0.001"], 3),
    ("dapo_eps_high_0.28_use_vllm", ["method=knowrl", "train.beta=0", "train.epsilon_high=0.28"], 2),
])
def test_vllm_token_truncation_at_2_is_unsloths(trainer, name, overrides, ga):
    """KnowRL's composed vLLM correction (token_truncate, 2.0) computed by TRL 1.16 in the rollout and
    applied in the loss equals unsloth's min(exp(old - sampling), 2) weighting."""
    case = _corver_case(name)
    t, mask, ids = _corver_tensors()
    configure(trainer, overrides, ga=ga, use_vllm=True)
    assert trainer.vllm_importance_sampling_correction and trainer.vllm_importance_sampling_mode == "token_truncate"
    new = t["per_token_logps"].clone().requires_grad_()
    queue = [t["old_per_token_logps"]] + ([t["ref_per_token_logps"]] if trainer.beta else [])
    output = rollout(trainer, ids, mask.tolist(), t["sampling_per_token_logps"], queue, new)
    ratio = output["importance_sampling_ratio"] * output["completion_mask"]
    assert torch.allclose(ratio, torch.tensor(case["output"]["importance_sampling_ratio_masked"]), rtol=1e-6)
    output.update(advantages=t["advantages"], num_items_in_batch=torch.tensor(float(case["input"]["num_items_in_batch"])))
    loss, grad = loss_and_grad(trainer, output, new)
    assert loss == pytest.approx(case["output"]["loss"], rel=1e-5, abs=1e-8)
    assert torch.allclose(grad, torch.tensor(case["output"]["grad_per_token_logps"]), rtol=1e-4, atol=1e-8)


def test_corvers_composed_vllm_run_weighs_nothing(trainer):
    """CorVer composed with vLLM rollouts: TRL computes no ratio and no old log-probs, so the loss is
    unsloth's with old None (ratio 1), the on-policy loss CorVer's call computes."""
    case = _corver_case("corver_old_none")
    t, mask, ids = _corver_tensors()
    configure(trainer, ["method=corver", f"train.beta={case['input']['beta']}"], ga=3, use_vllm=True)
    new = t["per_token_logps"].clone().requires_grad_()
    output = rollout(trainer, ids, mask.tolist(), t["sampling_per_token_logps"], [t["ref_per_token_logps"]], new)
    assert output.get("importance_sampling_ratio") is None and output.get("old_per_token_logps") is None
    output.update(advantages=t["advantages"])
    loss, grad = loss_and_grad(trainer, output, new)
    assert loss == pytest.approx(case["output"]["loss"], rel=1e-6)
    assert torch.allclose(grad, torch.tensor(case["output"]["grad_per_token_logps"]), rtol=1e-5, atol=1e-8)


# -- CorVer's compute_loss layout: a documented difference ---------------------------------------------------

def test_corvers_release_shifts_advantages_by_the_prompts_padding_the_harness_does_not(trainer):
    """The release trains a row whose prompt has p pad tokens with its advantages shifted p tokens
    right (vector notes); the harness's loss does not depend on prompt padding and equals the
    release's loss on equal-length prompts."""
    equal, unequal = (next(c for c in LAYOUT["cases"] if c["name"] == n)
                      for n in ("equal_prompt_lengths", "unequal_prompt_lengths"))
    assert unequal["output"]["loss"] != pytest.approx(equal["output"]["loss"], rel=0.1)
    table = torch.tensor(LAYOUT["bigram_table"])
    configure(trainer, ["method=corver", "train.beta=0"], ga=1, use_vllm=False)
    for case in (equal, unequal):
        x = case["input"]
        prompt, completion = torch.tensor(x["prompt_ids"]), torch.tensor(x["completion_ids"])
        mask = torch.tensor(x["completion_mask"])
        previous = torch.cat([prompt[:, -1:], completion[:, :-1]], dim=1)  # the bigram model's context
        new = torch.log_softmax(table[previous], -1).gather(-1, completion.unsqueeze(-1)).squeeze(-1)
        new = new.clone().requires_grad_()
        trainer._get_per_token_logps_and_entropies = StoredForward(new, [])
        inputs = {"prompt_ids": prompt, "prompt_mask": (prompt != x["pad_token_id"]).long(),
                  "completion_ids": completion, "completion_mask": mask, "advantages": torch.tensor(x["advantages"]),
                  "num_items_in_batch": torch.tensor(float(mask.sum()))}
        loss, _ = loss_and_grad(trainer, inputs, new)
        assert loss == pytest.approx(equal["output"]["loss"], rel=1e-6), case["name"]


# -- KnowRL: unsloth_zoo 2025.11.4 UnslothEfficientGRPO --------------------------------------------------

def _knowrl_logps():
    x = KNOWRL["shared_input"]
    ids = torch.tensor(x["completion_ids"])

    def logps(logits):
        return torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)

    leaf = torch.tensor(x["new_logits"]).requires_grad_()
    return leaf, logps(leaf), logps(torch.tensor(x["old_logits"])), logps(torch.tensor(x["ref_logits"])), x


@pytest.mark.parametrize("name, overrides", [
    ("knowrl_unsloth_dapo", ["experiment=knowrl-unsloth"]),
    ("knowrl_unsloth_dapo_one_chunk", ["experiment=knowrl-unsloth", "train.loss_chunks=1"]),
    ("knowrl_yaml_beta", ["method=knowrl", "train.loss_chunks=-1"]),
])
def test_knowrls_unsloth_loss(trainer, name, overrides):
    """experiment=knowrl-unsloth (dapo, KL 0, clip 0.2 / 0.28, one chunk per row) with KnowRL's vLLM
    correction gives UnslothEfficientGRPO's loss and gradient; so does grpo.yaml's KL 0.001."""
    case = next(c for c in KNOWRL["cases"] if c["name"] == name)
    i = case["input"]
    leaf, new, old, ref, x = _knowrl_logps()
    configure(trainer, overrides, ga=i["current_gradient_accumulation_steps"], use_vllm=True)
    assert (trainer.beta, trainer.epsilon_low, trainer.epsilon_high) == (i["beta"], i["epsilon_low"], i["epsilon_high"])
    queue = [old.detach()] + ([ref.detach()] if trainer.beta else [])
    output = rollout(trainer, x["completion_ids"], x["completion_mask"], torch.tensor(x["sampling_per_token_logps"]),
                     queue, new)
    ratio = output["importance_sampling_ratio"] * output["completion_mask"]
    assert torch.allclose(ratio, torch.tensor(case["output"]["importance_sampling_ratio_masked"]), rtol=1e-5)
    advantages = torch.tensor(x["advantages"]).unsqueeze(1).expand_as(new)  # the harness passes (B, T)
    output.update(advantages=advantages, num_items_in_batch=torch.tensor(float(i["num_items_in_batch"])))
    loss, grad = loss_and_grad(trainer, output, leaf)
    assert loss == pytest.approx(case["output"]["loss"], rel=1e-5)
    assert torch.allclose(grad, torch.tensor(case["output"]["grad_new_logits"]), rtol=1e-4, atol=1e-8)


def test_knowrls_hf_rollouts_have_no_correction(trainer):
    case = next(c for c in KNOWRL["cases"] if c["name"] == "knowrl_unsloth_dapo_no_vllm")
    i = case["input"]
    leaf, new, old, _, x = _knowrl_logps()
    configure(trainer, ["experiment=knowrl-unsloth"], ga=i["current_gradient_accumulation_steps"], use_vllm=False)
    trainer._get_per_token_logps_and_entropies = StoredForward(new, [])
    mask = torch.tensor(x["completion_mask"])
    ones = torch.ones(len(mask), 1, dtype=torch.long)
    inputs = {"prompt_ids": ones, "prompt_mask": ones, "completion_ids": torch.tensor(x["completion_ids"]),
              "completion_mask": mask, "advantages": torch.tensor(x["advantages"]).unsqueeze(1).expand_as(new),
              "old_per_token_logps": old.detach(), "num_items_in_batch": torch.tensor(float(i["num_items_in_batch"]))}
    loss, grad = loss_and_grad(trainer, inputs, leaf)
    assert loss == pytest.approx(case["output"]["loss"], rel=1e-5)
    assert torch.allclose(grad, torch.tensor(case["output"]["grad_new_logits"]), rtol=1e-4, atol=1e-8)


def test_one_chunk_per_row_divides_dapo_by_the_rows():
    """Upstream, not the harness: the chunk average is the only difference between the two cases."""
    per_row, whole = (next(c for c in KNOWRL["cases"] if c["name"] == n)["output"]["loss"]
                      for n in ("knowrl_unsloth_dapo", "knowrl_unsloth_dapo_one_chunk"))
    assert whole / per_row == pytest.approx(4.0, rel=1e-6)


@pytest.mark.parametrize("rows, requested, chunks", [(20, -1, 20), (20, 3, 4), (20, 7, 10), (20, 30, 20), (4, 1, 1),
                                                     (6, 4, 6)])
def test_chunk_count_is_unsloths_rule(rows, requested, chunks):
    """grpo_accumulated_loss (unsloth_zoo 2025.11.4 rl_replacements.py:567-569): -1 is one chunk per
    row; otherwise the smallest divisor of the rows at or above the request, at most the rows."""
    from factrl.harness.training.losses import chunk_count

    assert chunk_count(rows, requested) == chunks


def test_split_cuts_row_tensors_and_keeps_the_rest():
    from factrl.harness.training.losses import split_inputs

    inputs = {"completion_ids": torch.arange(8).view(4, 2), "num_items_in_batch": torch.tensor(8.0),
              "prompt_ids": torch.zeros(4, 3), "note": "x"}
    parts = split_inputs(inputs, rows=4, chunks=2)
    assert [p["completion_ids"].tolist() for p in parts] == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
    assert all(p["num_items_in_batch"] is inputs["num_items_in_batch"] and p["note"] == "x" for p in parts)
    assert [tuple(p["prompt_ids"].shape) for p in parts] == [(2, 3), (2, 3)]


def test_bad_loss_chunks_name_the_key():
    from factrl.harness.core.errors import ConfigError
    from factrl.harness.training.settings import TrainSettings

    with pytest.raises(ConfigError, match="train.loss_chunks"):
        TrainSettings.from_mapping(compose(["model=tiny-llama", "train.loss_chunks=0"]).train)
