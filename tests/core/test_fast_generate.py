"""The GPU rollout path (train.rollout.static_cache, compile, prompt_bucket, merge_lora in place), run
on the CPU through the same code: transformers' StaticCache, the generation config the harness swaps
in for TRL's, PEFT's merged branch on weights merged in place.

Tolerances (fp32 on the CPU unless said): a static cache gives the dynamic cache's logits within
1e-5 x their scale at every decode step, and a fixed seed samples the same tokens, through the real
TRL trainer (also with prompts padded to a bucket); merging in place gives PEFT's unmerged logits
within 1e-5 x their scale in fp32 and, in bf16, stays within bf16's own rounding: its largest
error against the fp32 model is at most 2x the unmerged bf16 layer's (the measured ratio is
printed); every weight comes back bit for bit. What only a GPU shows (CUDA graphs under
mode reduce-overhead, the speed): docs/GPU_CHECK.md.
"""
from __future__ import annotations

import pytest
import torch

ATOL = 1e-5


def _peft_model(dtype=torch.float32, seed=0):
    """tiny-llama with a LoRA adapter whose B is not zero (a merge that changes something)."""
    from peft import get_peft_model

    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.training.args import lora_config

    cfg = compose(["model=tiny-llama"])
    model = models.load_model(models.resolve(cfg.model), cfg.model).to(dtype)
    lora = lora_config(cfg.lora)
    lora.lora_dropout = 0.0
    torch.manual_seed(seed)  # LoRA A's initialisation
    model = get_peft_model(model, lora)  # adapters in fp32 over a bf16 base, as PEFT does by default
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    return model.eval(), cfg


def _params(model):
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def test_settings_resolve_auto_by_device():
    from factrl.harness.core.errors import ConfigError
    from factrl.harness.training.settings import RolloutSettings

    auto = RolloutSettings.from_mapping({})
    cpu, cuda = auto.resolved("cpu"), auto.resolved("cuda")
    assert cpu == {"device": "cpu", "merge_lora": True, "prepack": True, "static_cache": False, "compile": False,
                   "prompt_bucket": 0, "shared_prefill": True, "grouped_sdpa": True}
    assert cuda["grouped_sdpa"] is False  # CUDA keeps transformers' own rule
    assert cuda["merge_lora"] and not cuda["prepack"] and cuda["static_cache"] and cuda["prompt_bucket"] == 64
    assert cuda["shared_prefill"] is False  # the static path prefills whole prompts
    import importlib.util

    assert cuda["compile"] == (importlib.util.find_spec("triton") is not None)
    forced = RolloutSettings.from_mapping({"static_cache": True, "compile": True}).resolved("cpu")
    assert forced["static_cache"] and forced["compile"] and forced["prompt_bucket"] == 64
    assert not forced["prepack"]  # inductor cannot lower oneDNN-prepacked weights: merged in place instead
    assert not RolloutSettings.from_mapping({"merge_lora": "auto"}).merge("mps")
    with pytest.raises(ConfigError, match="compile=true needs a static KV cache"):
        RolloutSettings.from_mapping({"static_cache": False, "compile": True})
    with pytest.raises(ConfigError, match="prompt_bucket=-1 is out of range"):
        RolloutSettings.from_mapping({"prompt_bucket": -1})


def test_rollout_config_copies_trls_and_turns_compile_on():
    from transformers import GenerationConfig

    from factrl.harness.training.fast_generate import rollout_config, round_up

    trl = GenerationConfig(max_new_tokens=8, do_sample=True, disable_compile=True)
    static = rollout_config(trl, static=True, compile=False, device_type="cuda")
    assert static.cache_implementation == "static" and static.disable_compile and static.max_new_tokens == 8
    compiled = rollout_config(trl, static=True, compile=True, device_type="cuda")
    assert not compiled.disable_compile and compiled.compile_config.mode == "reduce-overhead"
    assert not compiled.compile_config._compile_all_devices
    cpu = rollout_config(trl, static=True, compile=True, device_type="cpu")
    assert cpu.compile_config.mode == "default" and cpu.compile_config._compile_all_devices
    assert trl.cache_implementation is None and trl.disable_compile  # TRL's own is untouched
    with pytest.raises(ValueError, match="needs the static cache"):
        rollout_config(trl, static=False, compile=True, device_type="cuda")
    assert (round_up(130, 64), round_up(128, 64), round_up(130, 0), round_up(1, 64)) == (192, 128, 130, 64)


def _padded_prompts(cfg):
    from factrl.harness.services import models

    tokenizer = models.load_tokenizer(models.resolve(cfg.model), cfg.model)
    ids = [tokenizer("The capital of France is")["input_ids"], tokenizer("Water boils at")["input_ids"]]
    width = max(len(i) for i in ids)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    input_ids = torch.tensor([[pad] * (width - len(i)) + i for i in ids])
    mask = torch.tensor([[0] * (width - len(i)) + [1] * len(i) for i in ids])
    assert mask.sum(1).unique().numel() == 2  # left padding in the batch
    return input_ids, mask


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_static_cache_gives_the_dynamic_caches_logits(dtype):
    """transformers' generate on the tiny model: every decode step's logits, static against dynamic."""
    model, cfg = _peft_model(dtype)
    input_ids, mask = _padded_prompts(cfg)
    out = {}
    for cache in (None, "static"):
        with torch.no_grad():
            got = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=12, do_sample=False,
                                 cache_implementation=cache, output_logits=True, return_dict_in_generate=True,
                                 disable_compile=True, pad_token_id=0)
        out[cache] = (got.sequences, torch.stack(got.logits, 1).float())
    (tokens, logits), (s_tokens, s_logits) = out[None], out["static"]
    scale = float(logits.abs().max())
    if dtype == torch.float32:  # exact up to fp32 rounding: the same tokens, the same logits
        assert torch.equal(tokens, s_tokens)
        assert torch.allclose(s_logits, logits, rtol=0, atol=ATOL * scale), float((s_logits - logits).abs().max())
        return
    # bf16: a near tie of the random model may go either way, so each row is compared while both
    # caches have decoded the same tokens (the step that first differs included: same inputs so far)
    new = tokens[:, input_ids.size(1):]
    for row in range(new.size(0)):
        differ = (new[row] != s_tokens[row, input_ids.size(1):]).nonzero()
        upto = int(differ[0]) + 1 if differ.numel() else new.size(1)
        assert upto >= 3  # the comparison covers decode steps, not the prefill alone
        gap = float((s_logits[row, :upto] - logits[row, :upto]).abs().max())
        assert gap <= 2e-2 * scale, (row, gap, scale)  # bf16: one rounding of ~8 bits on the logits


def test_in_place_merge_gives_peft_logits_and_restores_every_weight():
    from factrl.harness.services.models.merged_linears import merged_linears

    model, _ = _peft_model(torch.float32)
    ids = torch.randint(3, 1000, (3, 10), generator=torch.Generator().manual_seed(1))
    before = _params(model)
    with torch.no_grad():
        reference = model(input_ids=ids).logits
        with merged_linears(model, rows=3, prepack=False, inplace=True) as report:
            merged = model(input_ids=ids).logits
            base = model.get_base_model().model.layers[0].self_attn.q_proj.base_layer.weight
            assert not torch.equal(base, before["base_model.model.model.layers.0.self_attn.q_proj.base_layer.weight"])
        after = model(input_ids=ids).logits
    assert report.merged == 14 and report.inplace and not report.prepacked and report.skipped is None
    scale = float(reference.abs().max())
    assert torch.allclose(merged, reference, rtol=0, atol=ATOL * scale)
    assert torch.equal(after, reference)
    for name, value in _params(model).items():
        assert torch.equal(value, before[name]), name  # bit for bit: a saved copy, not W + D - D
    assert all(not m.merged for m in model.modules() if hasattr(m, "merged_adapters"))
    with pytest.raises(RuntimeError, match="inside"):
        with merged_linears(model, rows=3, prepack=False, inplace=True):
            raise RuntimeError("inside")
    for name, value in _params(model).items():
        assert torch.equal(value, before[name]), name  # an exception restores too
    with pytest.raises(ValueError, match="neither prepack nor keep"):
        with merged_linears(model, rows=3, prepack=True, inplace=True):
            pass


def test_bf16_merge_stays_within_bf16_rounding():
    """bf16 weights (the GPU's): merged in place the projection weights are rounded once more to
    bf16; against the fp32 model both bf16 paths err, the merged one by at most 2x the unmerged."""
    from factrl.harness.services.models.merged_linears import merged_linears

    errors = []
    for seed in (0, 1, 2):
        import copy

        bf16, _ = _peft_model(torch.bfloat16, seed=seed)
        fp32 = copy.deepcopy(bf16).float()  # the same weights (bf16 values) computed in fp32
        ids = torch.randint(3, 1000, (4, 16), generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            exact = fp32(input_ids=ids).logits
            unmerged = bf16(input_ids=ids).logits.float()
            with merged_linears(bf16, rows=4, prepack=False, inplace=True):
                merged = bf16(input_ids=ids).logits.float()
        scale = float(exact.abs().max())
        errors.append((float((unmerged - exact).abs().max()) / scale, float((merged - exact).abs().max()) / scale))
    print("\n[bf16 error / logit scale: unmerged, merged]", [(round(u, 5), round(m, 5)) for u, m in errors])
    for unmerged_error, merged_error in errors:
        assert 0 < unmerged_error < 0.05  # bf16 is not exact, and not broken
        assert merged_error <= 2 * unmerged_error


def _trainer(tmp_path, overrides=()):
    from tests.core.test_fast_step import _trainer as make

    return make(tmp_path, list(overrides))


def _rollout(trainer, dataset):
    torch.manual_seed(1234)
    return trainer._generate_and_score_completions([dataset[0], dataset[0], dataset[1], dataset[1]])


@pytest.mark.parametrize("variant", [["train.rollout.static_cache=true", "train.rollout.prompt_bucket=0"],
                                     ["train.rollout.static_cache=true"],
                                     ["train.rollout.static_cache=true", "train.rollout.prepack=false"]])
def test_static_rollouts_sample_the_same_tokens_through_trl(tmp_path, variant):
    """The real TRL trainer, seeded: a static cache (bare, with prompts padded to 64, and with the
    adapter merged in place) samples what the stock dynamic path samples."""
    trainer, dataset = _trainer(tmp_path / "fast", variant)
    fast = _rollout(trainer, dataset)
    stock, _ = _trainer(tmp_path / "stock", ["train.rollout.merge_lora=false", "train.rollout.shared_prefill=false",
                                             "train.rollout.grouped_sdpa=false"])
    slow = _rollout(stock, dataset)
    assert torch.equal(fast["completion_ids"], slow["completion_ids"])
    assert torch.allclose(fast["ref_per_token_logps"], slow["ref_per_token_logps"], rtol=0, atol=ATOL)
    seconds, rows, width, longest = trainer.generation_log[-1]
    assert rows == 4 and longest == fast["completion_ids"].size(1) and seconds > 0
    from factrl.harness.training.fast_generate import round_up

    bucket = 0 if "train.rollout.prompt_bucket=0" in variant else 64
    assert width == round_up(fast["prompt_ids"].size(1), bucket) and (width % 64 == 0 or not bucket)
    assert trainer.merge_report.inplace == ("train.rollout.prepack=false" in variant)
    base = trainer.accelerator.unwrap_model(trainer.model).get_base_model()
    assert getattr(base, "_previous_max_cache_length", 0) >= width + longest - 1  # transformers built a StaticCache
    assert not hasattr(stock.accelerator.unwrap_model(stock.model).get_base_model(), "_previous_max_cache_length")
    assert trainer.generation_config.cache_implementation is None and trainer.pad_to_multiple_of is None  # restored


def test_a_failing_compile_falls_back_to_eager_decoding_once(tmp_path, caplog):
    """CUDA's default compiles the decode step; where torch.compile fails (a torch / triton / driver
    mismatch never met on the CPU), the rollout generates again eagerly on the static cache, says so
    once, and later rollouts do not try again. The weights merged in place come back first."""
    trainer, dataset = _trainer(tmp_path, ["train.rollout.static_cache=true", "train.rollout.compile=true"])
    base = trainer.accelerator.unwrap_model(trainer.model).get_base_model()
    calls = []

    def broken(*args, **kwargs):
        calls.append(1)
        raise RuntimeError("InductorError: no kernel for this device\nsecond line")

    base.get_compiled_call = lambda config: broken
    before = _params(trainer.model)
    with caplog.at_level("WARNING"):
        first = _rollout(trainer, dataset)
        second = _rollout(trainer, dataset)
    assert len(calls) == 1 and trainer.compile_failed == "RuntimeError: InductorError: no kernel for this device"
    assert sum("decode eagerly on the static cache" in r.getMessage() for r in caplog.records) == 1
    assert first["completion_ids"].size(0) == second["completion_ids"].size(0) == 4
    assert len(trainer.generation_log) == 2 and trainer.merge_report.inplace
    for name, value in _params(trainer.model).items():
        assert torch.equal(value, before[name]), name  # the in-place merge was undone before the retry


@pytest.mark.slow
def test_compiled_static_decoding_samples_the_same_tokens_on_the_cpu(tmp_path):
    """torch.compile of the decode step (inductor's C++ backend on the CPU; CUDA graphs need a GPU)
    through the real trainer: the same seeded tokens as the uncompiled static cache, and every
    decode step's logits within 1e-5 of the eager ones' scale."""
    import shutil

    if shutil.which("g++") is None and shutil.which("c++") is None:
        pytest.skip("inductor on the CPU needs a C++ compiler; the GPU check compiles with CUDA graphs")
    plain, dataset = _trainer(tmp_path / "plain", ["train.rollout.static_cache=true"])
    expected = _rollout(plain, dataset)
    compiled, _ = _trainer(tmp_path / "compiled", ["train.rollout.static_cache=true", "train.rollout.compile=true"])
    got = _rollout(compiled, dataset)
    assert torch.equal(got["completion_ids"], expected["completion_ids"])
    model = compiled.accelerator.unwrap_model(compiled.model).get_base_model()
    assert hasattr(model, "_compiled_call")  # transformers compiled the decode step
    assert compiled.merge_report.inplace and compiled.merge_report.merged == 14
    # The logits of every decode step, compiled against eager, on the rollout's own prompts and shapes
    # (padded to the bucket, merged in place), so the compiled graph is reused, not traced again.
    from factrl.harness.services.models.merged_linears import merged_linears
    from factrl.harness.training.fast_generate import rollout_config, round_up

    peft = compiled.accelerator.unwrap_model(compiled.model)
    ids, mask = got["prompt_ids"], got["prompt_mask"]
    pad = round_up(ids.size(1), 64) - ids.size(1)
    ids = torch.nn.functional.pad(ids, (pad, 0), value=compiled.processing_class.pad_token_id or 0)
    mask = torch.nn.functional.pad(mask, (pad, 0), value=0)
    logits, calls = {}, []
    original = model.get_compiled_call
    model.get_compiled_call = lambda cfg: calls.append(cfg) or original(cfg)  # counts the compiled decode path
    for on in (True, False):
        config = rollout_config(compiled.generation_config, static=True, compile=on, device_type="cpu")
        config.do_sample, config.output_logits, config.return_dict_in_generate = False, True, True
        with torch.no_grad(), merged_linears(peft, rows=4, prepack=False, inplace=True):
            logits[on] = torch.stack(peft.generate(input_ids=ids, attention_mask=mask, generation_config=config).logits, 1)
    del model.get_compiled_call
    assert len(calls) == 1  # the compiled generate took transformers' compiled path, the eager one did not
    scale = float(logits[False].abs().max())
    gap = float((logits[True] - logits[False]).abs().max())
    assert gap <= ATOL * scale, (gap, scale)
