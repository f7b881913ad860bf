"""The fast HF step (train.rollout, train.logprob) against TRL's stock path, on tiny-llama.

What each fast part must keep, and the tolerance (fp32 on the CPU; float rounding only):
- merged rollouts (models/merged_linears.py): the logits of the merged (and oneDNN-prepacked)
  layers equal PEFT's unmerged ones within 1e-5 x their scale; a fixed seed samples the same
  tokens, through the real TRL trainer; the model's parameters are not written.
- log-probs (training/logprobs.py): the plain head and the shared prefix give TRL's fused
  log-probs and entropies within 1e-5 (absolute; nats), the loss within 1e-5 and the LoRA
  gradients within 1e-5 x the largest gradient.
- a whole run: two optimizer steps sample the same completions (so the same rewards and
  advantages), log the same losses within 1e-5 and end with the same adapter within 1e-5 x the
  largest weight.
"""
from __future__ import annotations

import json

import pytest
import torch

ATOL = 1e-5


def _trainer(tmp_path, overrides=(), dropout=None):
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.pool import load_pool
    from factrl.harness.training.args import grpo_args, lora_config
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.grpo import TokenGRPOTrainer
    from factrl.harness.training.settings import LogprobSettings, RolloutSettings
    from tests.core.toy_training import Toy

    cfg = compose(["model=tiny-llama", "train.beta=0.04", *overrides])
    identity = models.resolve(cfg.model)
    tokenizer = models.load_tokenizer(identity, cfg.model)
    dataset = build_dataset(load_pool(cfg.pool)[:4], cfg.model)
    lora = lora_config(cfg.lora)
    if dropout is not None:
        lora.lora_dropout = dropout
    trainer = TokenGRPOTrainer(model=models.load_model(identity, cfg.model), args=grpo_args(cfg, tmp_path),
                               train_dataset=dataset, processing_class=tokenizer, peft_config=lora,
                               method_reward=Toy(cfg.method).build_reward(None), reward_name="toy",
                               rollout=RolloutSettings.from_mapping(cfg.train.rollout),
                               logprob=LogprobSettings.from_mapping(cfg.train.logprob))
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop, which these tests bypass
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # a trained-looking adapter: B = 0 would make the merge a no-op
        for name, p in trainer.model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    return trainer, dataset


def _params(model) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("prepack", [True, False])
def test_merged_layers_give_peft_logits_and_write_nothing(tmp_path, prepack):
    from factrl.harness.services.models.merged_linears import merged_linears

    trainer, _ = _trainer(tmp_path)
    model = trainer.accelerator.unwrap_model(trainer.model)
    ids = torch.randint(3, 1000, (4, 12), generator=torch.Generator().manual_seed(1))
    before = _params(model)
    with torch.no_grad():
        reference = model(input_ids=ids).logits
        with merged_linears(model, rows=4, prepack=prepack) as report:
            merged = model(input_ids=ids).logits
        after_exit = model(input_ids=ids).logits
    lora_layers = 2 * 7  # tiny-llama: 2 layers x the seven projections
    assert report.merged == lora_layers and report.left == 0 and report.skipped is None
    assert report.prepacked is prepack and report.head == (1 if prepack else 0)
    assert report.fused == (2 * 2 if prepack else 0)  # q/k/v and gate/up of each layer as one matmul
    scale = float(reference.abs().max())
    assert torch.allclose(merged, reference, rtol=0, atol=ATOL * scale), float((merged - reference).abs().max())
    assert torch.equal(after_exit, reference)  # every forward restored
    for name, value in _params(model).items():
        assert torch.equal(value, before[name]), name
    with torch.no_grad(), model.disable_adapter():
        base = model(input_ids=ids).logits
    assert not torch.allclose(base, reference, rtol=0, atol=ATOL * scale)  # the adapter matters here


def test_active_lora_dropout_keeps_the_unmerged_layers(tmp_path):
    from factrl.harness.services.models.merged_linears import merged_linears

    trainer, _ = _trainer(tmp_path, dropout=0.1)
    model = trainer.accelerator.unwrap_model(trainer.model)
    model.train()
    own = {id(m) for m in model.modules() if "forward" in vars(m)}  # TRL's fused head patches the model's
    with merged_linears(model, rows=2, prepack=True) as report:
        assert report.merged == 0 and "dropout" in report.skipped
        assert {id(m) for m in model.modules() if "forward" in vars(m)} == own


def _rollout(trainer, dataset):
    torch.manual_seed(1234)
    return trainer._generate_and_score_completions([dataset[0], dataset[0], dataset[1], dataset[1]])


@pytest.mark.parametrize("variant", [[], ["train.rollout.merge_lora=false"], ["train.rollout.shared_prefill=false"]])
def test_fast_rollouts_sample_the_same_tokens_through_trl(tmp_path, variant):
    """Merged weights and the shared prefill, together and each alone, against TRL's stock HF
    generate: two questions of different prompt lengths (left padding), two completions each."""
    trainer, dataset = _trainer(tmp_path, variant)
    fast = _rollout(trainer, dataset)
    merging = "train.rollout.merge_lora=false" not in variant
    assert trainer.merge_report.merged == (14 if merging else 0) and trainer.merge_report.prepacked is merging
    stock, _ = _trainer(tmp_path / "stock", ["train.rollout.merge_lora=false", "train.rollout.shared_prefill=false",
                                             "train.rollout.grouped_sdpa=false"])
    slow = _rollout(stock, dataset)
    assert stock.merge_report.merged == 0
    assert fast["prompt_mask"].sum(1).unique().numel() == 2  # the prompts differ in length: left padding
    assert torch.equal(fast["completion_ids"], slow["completion_ids"])
    assert torch.equal(fast["advantages"], slow["advantages"])  # same tokens -> same rewards and advantages
    assert torch.allclose(fast["ref_per_token_logps"], slow["ref_per_token_logps"], rtol=0, atol=ATOL)


def test_shared_prefill_runs_each_prompt_once(tmp_path):
    trainer, dataset = _trainer(tmp_path, ["train.rollout.merge_lora=false"])
    seen = []
    embed = trainer.accelerator.unwrap_model(trainer.model).get_base_model().get_input_embeddings()
    handle = embed.register_forward_hook(lambda _m, args, _out: seen.append(tuple(args[0].shape)))
    trainer.model.eval()
    with torch.no_grad():
        trainer._generate_single_turn([dataset_ids(trainer, dataset[0])] * 2 + [dataset_ids(trainer, dataset[1])] * 2,
                                      None, {}, 2)
    handle.remove()
    assert seen[0][0] == 2 and seen[1] == (4, 1)  # two distinct prompts once, then every row's last prompt token


def dataset_ids(trainer, row) -> list[int]:
    return trainer.processing_class.apply_chat_template(row["prompt"], add_generation_prompt=True,
                                                        tokenize=True)["input_ids"]


def _grads(model) -> list[torch.Tensor]:
    return [p.grad.detach().clone() for n, p in model.named_parameters() if "lora_" in n and p.grad is not None]


@pytest.mark.parametrize("fast", [{"head": "plain", "shared_prefix": True}, {"head": "plain", "shared_prefix": False},
                                  {"head": "fused", "shared_prefix": True}])
def test_log_probs_entropies_loss_and_gradients_equal_trl(tmp_path, fast):
    from factrl.harness.training.settings import LogprobSettings

    trainer, dataset = _trainer(tmp_path)
    batch = _rollout(trainer, dataset)
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    width = batch["completion_ids"].size(1)
    got = {}
    for name, settings in (("stock", {"head": "fused", "shared_prefix": False}), ("fast", fast)):
        trainer._logprob = LogprobSettings.from_mapping(settings)
        trainer.shared_prefix = settings["shared_prefix"]
        trainer.model.zero_grad()
        logps, entropies, _ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, width,
                                                                         compute_entropy=True)
        loss = trainer.compute_loss(trainer.model, batch)
        loss.backward()
        with torch.no_grad(), trainer.accelerator.unwrap_model(trainer.model).disable_adapter():
            ref = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, width, batch_size=2)[0]
        got[name] = (logps.detach(), entropies.detach(), float(loss.detach()), _grads(trainer.model), ref)
    completion = batch["completion_mask"].bool()
    stock, new = got["stock"], got["fast"]
    assert torch.allclose(new[0], stock[0], rtol=0, atol=ATOL)
    assert torch.equal(new[0][~completion], torch.zeros_like(new[0][~completion]))  # padding scores 0, as TRL's
    assert torch.allclose(new[1][completion], stock[1][completion], rtol=0, atol=ATOL)
    assert abs(new[2] - stock[2]) <= ATOL
    largest = max(float(g.abs().max()) for g in stock[3])
    assert largest > 0 and len(new[3]) == len(stock[3])
    for a, b in zip(new[3], stock[3]):
        assert torch.allclose(a, b, rtol=0, atol=ATOL * largest), float((a - b).abs().max())
    assert torch.allclose(new[4], stock[4], rtol=0, atol=ATOL)


def test_plain_head_is_taken_only_where_the_logits_fit():
    from factrl.harness.training.logprobs import choose_head

    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert choose_head("auto", cpu, 8, 64, 49_152) == "plain"
    assert choose_head("auto", cpu, 48, 1000, 128_256) == "fused"  # 24 GB of logits
    assert choose_head("auto", cuda, 8, 64, 49_152) == "fused"
    assert choose_head("plain", cuda, 48, 1000, 128_256) == "plain"


def _run(tmp_path, overrides):
    from tests.core.toy_training import train_toy

    adapter = train_toy(tmp_path, ["train.learning_rate=1e-2", "train.warmup_ratio=0", "train.beta=0.04",
                                   *overrides])
    from safetensors.torch import load_file

    log = [json.loads(x) for x in (tmp_path / "train" / "log.jsonl").read_text().splitlines()]
    records = [json.loads(x) for x in (tmp_path / "train" / "reward_records.jsonl").read_text().splitlines()]
    components = json.loads((tmp_path / "train" / "components.json").read_text())
    return load_file(str(adapter / "adapter_model.safetensors")), log, records, components


def test_a_two_step_run_equals_the_stock_path(tmp_path):
    stock_overrides = ["train.rollout.merge_lora=false", "train.rollout.shared_prefill=false", "train.rollout.grouped_sdpa=false",
                       "train.logprob.head=fused", "train.logprob.shared_prefix=false"]
    fast = _run(tmp_path / "fast", [])
    stock = _run(tmp_path / "stock", stock_overrides)
    assert [r["completion"] for r in fast[2]] == [r["completion"] for r in stock[2]]  # the same sampled text
    steps = [(a, b) for a, b in zip(fast[1], stock[1]) if "loss" in b]
    assert len(steps) == 2
    for a, b in steps:
        assert a["rewards/toy/mean"] == b["rewards/toy/mean"]
        assert abs(a["loss"] - b["loss"]) <= ATOL and abs(a["kl"] - b["kl"]) <= ATOL
    largest = max(float(v.abs().max()) for v in stock[0].values())
    assert fast[0].keys() == stock[0].keys()
    for key, value in stock[0].items():
        assert torch.allclose(fast[0][key], value, rtol=0, atol=ATOL * largest), key
    recorded = fast[3]["components"]["fast_path"]
    assert recorded["rollout"] == {"merge_lora": "auto", "prepack": "auto", "shared_prefill": True, "static_cache": "auto",
                                   "compile": "auto", "prompt_bucket": 64, "grouped_sdpa": "auto"} and not recorded["stand_in"]
    assert recorded["rollout_resolved"] == {"device": "cpu", "merge_lora": True, "prepack": True, "static_cache": False,
                                            "compile": False, "prompt_bucket": 0, "shared_prefill": True,
                                            "grouped_sdpa": True}
    assert stock[3]["components"]["fast_path"]["logprob"] == {"shared_prefix": False, "head": "fused"}


def test_a_run_whose_adapter_did_not_move_fails_with_one_line(tmp_path):
    """train.learning_rate=0: every update is zero, the adapter stays at its initial values, the
    run fails naming train/adapter_delta.json; with a real learning rate it records the change."""
    from factrl.harness.training.adapter_delta import AdapterUnchangedError
    from tests.core.toy_training import train_toy

    with pytest.raises(AdapterUnchangedError, match=r"training left all 28 trainable LoRA tensors at their initial "
                                                    r"values \(.*adapter_delta.json\)"):
        train_toy(tmp_path / "still", ["train.learning_rate=0", "train.require_update=true"])
    still = json.loads((tmp_path / "still" / "train" / "adapter_delta.json").read_text())
    assert still["changed"] == 0 and still["relative_change"] == 0 and still["tensors"] == 28
    assert not (tmp_path / "still" / "train" / "TRAINING_DONE").exists()
    train_toy(tmp_path / "moved", ["train.learning_rate=1e-2", "train.warmup_ratio=0", "train.require_update=true"])
    moved = json.loads((tmp_path / "moved" / "train" / "adapter_delta.json").read_text())
    assert moved["changed"] == 28 and moved["relative_change"] > 0 and moved["max_abs_change"] > 0
    assert moved["initial_sha256"] == json.loads((tmp_path / "moved" / "train" / "adapter_init.json").read_text())[
        "initial_sha256"]


def test_rollouts_log_every_completion_with_its_reward_and_advantage(tmp_path):
    """train/rollouts.jsonl (docs/CONTRACTS.md): one line per completion per step, its text as the
    reward saw it, R_bar and the mean advantage that reached the loss (groups centre on 0)."""
    from tests.core.toy_training import train_toy

    train_toy(tmp_path, ["train.learning_rate=1e-2", "train.warmup_ratio=0"])
    lines = [json.loads(x) for x in (tmp_path / "train" / "rollouts.jsonl").read_text().splitlines()]
    records = [json.loads(x) for x in (tmp_path / "train" / "reward_records.jsonl").read_text().splitlines()]
    assert len(lines) == 2 * 2 * 2  # steps x questions x completions (tiny-llama's protocol)
    assert [x["step"] for x in lines] == [1, 1, 1, 1, 2, 2, 2, 2]
    assert [x["completion"] for x in lines] == [0, 1, 2, 3] * 2 and [x["group"] for x in lines] == [0, 0, 1, 1] * 2
    for line, record in zip(lines, records):
        assert set(line) == {"step", "process", "completion", "group", "row_id", "question", "prompt", "text",
                             "tokens", "clipped", "reward", "advantage", "no_signal"}
        assert record["completion"].startswith(line["text"][:40]) and line["question"] in line["prompt"]
        assert line["process"] == 0 and line["no_signal"] is None and 0.0 <= line["reward"] <= 1.0
        assert line["clipped"] == (line["tokens"] == 16)  # tiny-llama's limit; it rarely emits EOS
    for step in (1, 2):
        for group in (0, 1):
            pair = [x for x in lines if x["step"] == step and x["group"] == group]
            if pair[0]["reward"] != pair[1]["reward"]:
                assert pair[0]["advantage"] == pytest.approx(-pair[1]["advantage"], rel=0.2)
                assert (pair[0]["reward"] > pair[1]["reward"]) == (pair[0]["advantage"] > pair[1]["advantage"])
