"""Paper-shaped models without downloads: build a model of the real class and shape with random weights.

Each paper model config (configs/model/<name>.yaml) carries an `architecture:` block copied
from the real model's config.json (layers, hidden size, heads, vocabulary, tied embeddings,
RoPE). From it this module builds the Hugging Face config, a model of the real class
(LlamaForCausalLM, Qwen3ForCausalLM, Olmo2ForCausalLM) with random weights - on the meta
device (no memory: shapes and parameter counts only), the CPU or a GPU - and counts the
parameters of the full model and of its LoRA adapter by formula, so memory planning
(factrl.harness.training.memory_plan) and timing need no hub access.

    model = build_random(cfg.model, dtype="bfloat16", device="cuda")        # the real shape
    small = build_random(cfg.model, shrink=tiny_shrink(arch))                # same class, CPU-sized
    n = parameter_count(arch)                                                # formula, no allocation
    saved = save_random(models.resolve(cfg.model), cfg.model)                # random weights on disk, for vLLM
"""
from __future__ import annotations

from typing import Any, Mapping

from ...core.errors import ConfigError, ModelNotFoundError

# Fields that fix the parameter shapes; a shrink may override any architecture field.
SHAPE_FIELDS = ("model_type", "num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
                "num_key_value_heads", "head_dim", "vocab_size", "tie_word_embeddings")
FAMILIES = ("llama", "qwen3", "olmo2")  # the model types whose layer layout parameter_count knows


def architecture(model_cfg: Any, shrink: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The model config's `architecture` block as a dict, with `shrink` applied on top.

    A config without one (a hub id or local directory given by hand) is a ConfigError naming
    the file to add it to.
    """
    from .settings import ModelSettings

    settings = ModelSettings.of(model_cfg)
    arch = dict(settings.architecture or {})
    name = settings.name or settings.id
    if not arch:
        raise ConfigError(f"model '{name}' has no `architecture:` block; add the real model's config.json fields "
                          f"(model_type, num_hidden_layers, hidden_size, ...) to configs/model/{name}.yaml, or "
                          f"use a model that has one (llama-3.2-3b, llama-3.1-8b, qwen3-4b, qwen3-8b, qwen3-14b, "
                          f"olmo-2-13b)")
    missing = [f for f in SHAPE_FIELDS if f not in arch]
    if missing:
        raise ConfigError(f"configs/model/{name}.yaml: architecture is missing {', '.join(missing)}; copy them from "
                          f"the model's config.json")
    if str(arch["model_type"]) not in FAMILIES:
        raise ConfigError(f"configs/model/{name}.yaml: architecture.model_type={arch['model_type']!r} is not one "
                          f"the harness can build; use one of {', '.join(FAMILIES)}")
    arch.update(dict(shrink or {}))
    return arch


def tiny_shrink(arch: Mapping[str, Any], *, vocab_size: int = 32000, layers: int = 2, hidden: int = 64,
                heads: int = 4) -> dict[str, Any]:
    """Overrides that make a CPU-sized model of the same family: few layers, narrow, the same
    attention kind (multi-head stays multi-head, grouped-query keeps a KV group of heads / 2)
    and the same tying. `vocab_size` must hold the tokenizer's ids (32000: the Llama-2 one)."""
    mha = int(arch["num_key_value_heads"]) == int(arch["num_attention_heads"])
    return {"num_hidden_layers": layers, "hidden_size": hidden, "intermediate_size": hidden * 2,
            "num_attention_heads": heads, "num_key_value_heads": heads if mha else max(1, heads // 2),
            "head_dim": hidden // heads, "vocab_size": vocab_size}


def hf_config(arch: Mapping[str, Any]):
    """The transformers config object (LlamaConfig, Qwen3Config, Olmo2Config) for an architecture dict."""
    from transformers import AutoConfig

    fields = {k: v for k, v in dict(arch).items() if k != "model_type"}
    # The families' default special-token ids belong to their own vocabularies (OLMo 2's eos 50279);
    # a random stand-in gets its tokenizer's ids later (models.load_model), so none by default.
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        fields.setdefault(key, None)
    if fields.get("rope_scaling") is not None:
        fields["rope_scaling"] = dict(fields["rope_scaling"])
    return AutoConfig.for_model(str(arch["model_type"]), **fields)


def build_random(model_cfg: Any, *, shrink: Mapping[str, Any] | None = None, dtype: Any = None,
                 seed: int | None = None, device: str = "cpu"):
    """A causal LM of the real class and shape with random weights (the family's own init).

    model_cfg: a model config node (or a plain mapping) with an `architecture` block.
    shrink: architecture fields to override (tests: `tiny_shrink(arch)`).
    dtype: torch dtype or its name (None / auto: bfloat16 on CUDA, float32 otherwise).
    seed: seeds torch's generator first (None: the node's `model.seed`), so the same seed on the same device gives the same
    weights (CPU and CUDA generators differ). device: "meta" allocates nothing (shapes and
    counts only), "cpu", or "cuda" (weights are created and initialised there).
    """
    import torch
    from transformers import AutoModelForCausalLM

    from .settings import ModelSettings

    config = hf_config(architecture(model_cfg, shrink))
    dtype = dtype if isinstance(dtype, torch.dtype) else torch_dtype(dtype)
    torch.manual_seed(ModelSettings.of(model_cfg).seed if seed is None else int(seed))
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    return model


def model_parameters(model: Any) -> int:
    """Parameters of a built model, tied weights counted once (as published sizes count them)."""
    return sum(p.numel() for p in model.parameters())


def _dims(arch: Mapping[str, Any]) -> tuple[int, int, int, int, int, int]:
    h, inter = int(arch["hidden_size"]), int(arch["intermediate_size"])
    head_dim = int(arch.get("head_dim") or h // int(arch["num_attention_heads"]))
    q = int(arch["num_attention_heads"]) * head_dim
    kv = int(arch["num_key_value_heads"]) * head_dim
    return h, inter, q, kv, head_dim, int(arch["num_hidden_layers"])


def parameter_count(arch: Mapping[str, Any]) -> int:
    """Parameters by formula, from the architecture alone (no allocation).

    Per layer: attention q (h x q), k and v (h x kv each), o (q x h), biases on q/k/v/o when
    attention_bias; SwiGLU MLP 3 x h x I; norms: Llama 2h (input, post-attention), Qwen3 2h plus
    per-head q/k norms (2 x head_dim), OLMo 2 2h (post-attention, post-feedforward) plus q/k
    norms over the full projections (q + kv). Plus the embedding V x h, the final norm h and
    an untied LM head V x h.
    """
    h, inter, q, kv, head_dim, layers = _dims(arch)
    kind = str(arch["model_type"])
    attention = h * q + 2 * h * kv + q * h
    if arch.get("attention_bias"):
        attention += q + 2 * kv + h
    mlp = 3 * h * inter
    if arch.get("mlp_bias"):
        mlp += 2 * inter + h
    norms = 2 * h + {"llama": 0, "qwen3": 2 * head_dim, "olmo2": q + kv}[kind]
    vocab = int(arch["vocab_size"])
    head = 0 if arch.get("tie_word_embeddings") else vocab * h
    return layers * (attention + mlp + norms) + vocab * h + h + head


LORA_SHAPES = {  # module -> (in features, out features) in terms of (h, I, q, kv)
    "q_proj": lambda h, i, q, kv: (h, q), "k_proj": lambda h, i, q, kv: (h, kv),
    "v_proj": lambda h, i, q, kv: (h, kv), "o_proj": lambda h, i, q, kv: (q, h),
    "gate_proj": lambda h, i, q, kv: (h, i), "up_proj": lambda h, i, q, kv: (h, i),
    "down_proj": lambda h, i, q, kv: (i, h),
}


def lora_parameter_count(arch: Mapping[str, Any], r: int, target_modules: list[str] | tuple[str, ...]) -> int:
    """LoRA parameters: r x (in + out) per targeted projection per layer (A is r x in, B out x r)."""
    h, inter, q, kv, _, layers = _dims(arch)
    unknown = [m for m in target_modules if m not in LORA_SHAPES]
    if unknown:
        raise ConfigError(f"lora.target_modules: {', '.join(unknown)} not known to the memory planner; "
                          f"use {', '.join(LORA_SHAPES)}")
    per_layer = sum(sum(LORA_SHAPES[m](h, inter, q, kv)) * int(r) for m in target_modules)
    return layers * per_layer


def describe(model_cfg: Any) -> dict[str, Any]:
    """A provenance entry (kind "model") marking random weights of the real shape (the node's
    `architecture`, `shrink` and `seed`) as a stand-in."""
    from .settings import ModelSettings

    cfg = ModelSettings.of(model_cfg)
    shrink = cfg.shrink
    arch = architecture(cfg, shrink)
    return {"kind": "model", "backend": "random", "model": cfg.id, "revision": None, "stand_in": True,
            "label": f"random-weight {cfg.name} shape" + (" (shrunk)" if shrink else ""), "seed": cfg.seed,
            "shrink": dict(shrink) if shrink else None,
            "parameters": parameter_count(arch), "tokenizer_from": cfg.tokenizer_from,
            "note": f"random weights in the shape of {cfg.id} (no hub): for timing and memory checks only; "
                    f"its outputs are noise"}


def torch_dtype(name: str | None):
    """The torch dtype a model config names (`model.dtype`); auto: bfloat16 on CUDA, float32 otherwise."""
    import torch

    if name in (None, "auto"):
        return torch.bfloat16 if torch.cuda.is_available() else torch.float32
    try:
        return {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
                "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}[str(name)]
    except KeyError:
        raise ModelNotFoundError(f"model.dtype={name!r} is not valid; use auto, float32, bfloat16 or float16.") from None
