"""Paper-shaped models without downloads: architecture blocks, random builds, parameter counts."""
from __future__ import annotations

from pathlib import Path

import pytest

from factrl.harness.services.models import disk as disk_models
from factrl.harness.services.models import shapes as ms
from factrl.harness.services import models
from factrl.harness.engine.config import compose
from factrl.harness.core.errors import ConfigError

# Published sizes (model cards): billions of parameters, tied embeddings counted once.
PAPER = {"llama-3.2-3b": ("LlamaForCausalLM", 3.21), "llama-3.1-8b": ("LlamaForCausalLM", 8.03),
         "qwen3-4b": ("Qwen3ForCausalLM", 4.02), "qwen3-8b": ("Qwen3ForCausalLM", 8.19),
         "qwen3-14b": ("Qwen3ForCausalLM", 14.8), "olmo-2-13b": ("Olmo2ForCausalLM", 13.7)}
FAMILY_MODELS = ("llama-3.2-3b", "qwen3-4b", "olmo-2-13b")  # one per family (llama, qwen3, olmo2)


def _model_cfg(name: str, *extra: str):
    return compose([f"model={name}", *extra]).model


@pytest.mark.parametrize("name", sorted(PAPER))
def test_full_size_on_meta_matches_formula_and_published_size(name):
    cls, billions = PAPER[name]
    cfg = _model_cfg(name)
    model = ms.build_random(cfg, device="meta", dtype="bfloat16")  # shapes only: nothing allocated
    assert type(model).__name__ == cls
    counted = ms.model_parameters(model)
    assert counted == ms.parameter_count(ms.architecture(cfg))
    assert counted / 1e9 == pytest.approx(billions, abs=0.015 * billions)
    config = model.config
    arch = cfg.architecture
    assert (config.num_hidden_layers, config.hidden_size, config.num_key_value_heads, config.vocab_size) == (
        arch.num_hidden_layers, arch.hidden_size, arch.num_key_value_heads, arch.vocab_size)
    assert bool(config.tie_word_embeddings) == bool(arch.tie_word_embeddings)


def test_llama3_rope_scaling_reaches_the_hf_config():
    config = ms.hf_config(ms.architecture(_model_cfg("llama-3.2-3b")))
    rope = config.rope_parameters
    assert rope["rope_type"] == "llama3" and rope["factor"] == 32.0 and rope["rope_theta"] == 500000.0


@pytest.mark.parametrize("name", FAMILY_MODELS)
def test_shrunk_model_is_the_same_class_and_lora_count_matches_peft(name):
    from peft import LoraConfig, get_peft_model

    cfg = _model_cfg(name)
    arch = ms.architecture(cfg)
    shrink = ms.tiny_shrink(arch)
    model = ms.build_random(cfg, shrink=shrink, dtype="float32")
    assert type(model).__name__ == PAPER[name][0]
    small = ms.architecture(cfg, shrink)
    assert ms.model_parameters(model) == ms.parameter_count(small)
    # Multi-head stays multi-head (OLMo 2), grouped-query stays grouped.
    assert (model.config.num_key_value_heads == model.config.num_attention_heads) == (
        arch["num_key_value_heads"] == arch["num_attention_heads"])
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    peft = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=targets, task_type="CAUSAL_LM"))
    trainable = sum(p.numel() for p in peft.parameters() if p.requires_grad)
    assert trainable == ms.lora_parameter_count(small, 4, targets)


def test_same_seed_same_weights_other_seed_differs():
    cfg = _model_cfg("qwen3-4b")
    shrink = ms.tiny_shrink(ms.architecture(cfg))
    a, b, c = (ms.build_random(cfg, shrink=shrink, seed=s).model.embed_tokens.weight for s in (1, 1, 2))
    assert a.equal(b) and not a.equal(c)


def test_model_without_architecture_is_a_one_line_config_error():
    with pytest.raises(ConfigError, match=r"no `architecture:` block.*configs/model/tiny-llama.yaml"):
        ms.architecture(_model_cfg("tiny-llama"))
    with pytest.raises(ConfigError, match="model_type='gpt2'"):
        ms.architecture({"name": "x", "architecture": {**dict(_model_cfg("qwen3-4b").architecture),
                                                       "model_type": "gpt2"}})


SHRINK = ("+model.shrink={num_hidden_layers:2,hidden_size:64,intermediate_size:128,num_attention_heads:4,"
          "num_key_value_heads:2,head_dim:16,vocab_size:32000}")


def test_random_source_builds_the_real_class_with_the_named_tokenizer():
    import torch

    cfg = _model_cfg("qwen3-4b", "model.source=random", "model.dtype=float32", SHRINK)
    identity = models.resolve(cfg)
    tiny = models.resolve(_model_cfg("tiny-llama"))
    assert identity.id == "random:Qwen/Qwen3-4B" and identity.revision == "seed-0"
    assert identity.path == tiny.path and len(identity.sha256) == 64
    assert models.resolve(_model_cfg("qwen3-4b", "model.source=random", "model.seed=1", SHRINK)).sha256 != identity.sha256
    tokenizer = models.load_tokenizer(identity, cfg)
    model = models.load_model(identity, cfg, device="cpu")
    assert type(model).__name__ == "Qwen3ForCausalLM"
    assert model.config.eos_token_id == tokenizer.eos_token_id == 2
    inputs = tokenizer("Who wrote Hamlet?", return_tensors="pt")
    out = model.generate(**inputs, max_new_tokens=3, do_sample=False)
    assert out.shape[1] == inputs["input_ids"].shape[1] + 3 and int(out.max()) < 32000
    assert model.model.embed_tokens.weight.dtype == torch.float32


def test_random_source_refuses_a_vocabulary_smaller_than_the_tokenizer():
    small_vocab = SHRINK.replace("vocab_size:32000", "vocab_size:1000")
    cfg = _model_cfg("llama-3.2-3b", "model.source=random", "model.dtype=float32", small_vocab)
    with pytest.raises(ConfigError, match="32000-token vocabulary exceeds the random model's vocab_size=1000"):
        models.load_model(models.resolve(cfg), cfg, device="cpu")


def test_random_source_is_recorded_as_a_model_stand_in():
    from factrl.harness.engine.run.orchestrate import _provenance

    cfg = _model_cfg("llama-3.2-3b", "model.source=random", SHRINK)
    fields = _provenance({"extractor": {"stand_in": True}}, cfg)
    assert fields["stand_ins"] == ["extractor", "model"]
    entry = fields["components"]["model"]
    assert entry["kind"] == "model" and entry["backend"] == "random" and entry["model"] == "meta-llama/Llama-3.2-3B-Instruct"
    assert entry["note"] and entry["tokenizer_from"] == "tiny-llama"
    assert _provenance({}, _model_cfg("llama-3.2-3b"))["stand_ins"] == []  # real weights: no model entry


def test_a_random_model_for_vllm_is_saved_to_disk_with_its_tokenizer(tmp_path):
    """vLLM reads weights from disk only: TRL's engine loads model.name_or_path (empty for a model built
    with from_config), the evaluation backend identity.path (for a random model: its tokenizer's
    folder, i.e. tiny-llama's weights). save_random writes the model once and points both there."""
    import torch

    cfg = _model_cfg("llama-3.2-3b", "model.source=random", "model.dtype=float32", SHRINK)
    identity = models.resolve(cfg)
    built = models.load_model(identity, cfg, device="cpu")
    assert built.name_or_path == ""  # what TRL would hand vLLM
    saved = disk_models.save_random(identity, cfg, root=tmp_path)
    assert (saved.id, saved.sha256, saved.revision) == (identity.id, identity.sha256, identity.revision)
    folder = Path(saved.path)
    assert folder.parent == tmp_path and folder != Path(identity.path) and models.saved_random(saved)
    assert {"config.json", "model.safetensors", "tokenizer_config.json"} <= {p.name for p in folder.iterdir()}
    loaded = models.load_model(saved, cfg, device="cpu")
    assert loaded.name_or_path == str(folder) and type(loaded).__name__ == "LlamaForCausalLM"
    for (name, a), (_, b) in zip(built.state_dict().items(), loaded.state_dict().items()):
        assert torch.equal(a, b), name  # the same weights (same seed, same device)
    assert models.load_tokenizer(saved, cfg).eos_token_id == models.load_tokenizer(identity, cfg).eos_token_id
    assert disk_models.save_random(saved, cfg, root=tmp_path) == saved  # once
    assert disk_models.for_disk_loaders(identity, compose_model(cfg, [])) == identity  # no vLLM: nothing saved


def compose_model(model_cfg, overrides):
    from factrl.harness.engine.config import compose

    root = compose(overrides)
    root.model = model_cfg
    return root


def test_vllm_refuses_a_random_model_that_is_not_on_disk(tmp_path):
    from factrl.evals.backends.base import Decoding
    from factrl.evals.backends.vllm import VLLMBackend
    from factrl.harness.core.errors import HarnessError

    cfg = _model_cfg("llama-3.2-3b", "model.source=random", "model.dtype=float32", SHRINK)
    identity = models.resolve(cfg)
    with pytest.raises(HarnessError, match="backend=vllm loads weights from disk.*model.path=DIR"):
        VLLMBackend(identity, cfg, Decoding.from_mapping(max_new_tokens=4))
    saved = disk_models.save_random(identity, cfg, root=tmp_path)
    with pytest.raises(HarnessError) as err:  # past the check: here, no vLLM / no CUDA
        VLLMBackend(saved, cfg, Decoding.from_mapping(max_new_tokens=4))
    assert "loads weights from disk" not in str(err.value)


def test_vllm_rollouts_refuse_a_random_model_built_in_memory(tmp_path):
    from factrl.harness.pool import load_pool
    from factrl.harness.training.engine import train
    from tests.core.toy_training import Toy

    root = compose_model(_model_cfg("llama-3.2-3b", "model.source=random", "model.dtype=float32", SHRINK),
                         ["train.use_vllm=true"])
    with pytest.raises(ConfigError, match="train.use_vllm=true: vLLM loads the model from disk.*model.path=DIR"):
        train(root, Toy(root.method), models.resolve(root.model), tmp_path, load_pool(root.pool))
