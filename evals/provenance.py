"""What produced a set's generations: the descriptor written to generation.json and metrics.json.

The descriptor names the backend and its settings, the model identity, the adapter hash, the
prompt (version, hash, format) and the decoding. `stable_key` drops machine-local paths from it:
resume and the response cache compare that key, so a moved checkout still resumes. Nothing
secret is recorded (URLs lose credentials and query strings, secret-looking keys are redacted).
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from factrl.harness.core import registry
from factrl.harness.core.errors import HarnessError
from factrl.harness.services.models import ModelIdentity
from factrl.harness.core.prompts import PROMPT_VERSION, addition_of, method_prompt, prompt_hash, prompt_variant, system_prompt

from .backends import Decoding

if TYPE_CHECKING:
    from .settings import EvalSettings


def describe_generation(settings: EvalSettings, cfg: Any, identity: ModelIdentity, decoding: Decoding,
                        adapter: str | Path | None) -> dict:
    """The descriptor of a set's generations (generation.json; what resume and the cache compare)."""
    model_cfg = cfg.get("model")
    system = system_prompt(settings.anti_loop)
    descriptor = {"backend": settings.backend, "backend_settings": backend_settings(settings, cfg, model_cfg),
                  "model": identity.to_dict(), "adapter": adapter_info(adapter), "prompt_version": PROMPT_VERSION,
                  "prompt_hash": prompt_hash(system), "anti_loop": settings.anti_loop,
                  "prompt_format": prompt_format(model_cfg), "decoding": decoding.to_dict()}
    # `prompt_hash` stays the shared prompt's (what a leaderboard version freezes); a method's
    # addition is recorded beside it, with the hash of the whole system prompt the model saw, and
    # is part of the cache and resume key (stable_key keeps it). Absent for every other method.
    addition, method = addition_of(cfg)
    if addition:
        descriptor["method_prompt"] = {**method_prompt(addition, method),
                                       "system_hash": prompt_hash(system_prompt(settings.anti_loop, addition))}
    return descriptor


def stable_key(descriptor: dict) -> dict:
    """The descriptor without machine-local paths: what resume checks and the cache key compare."""
    key = {k: v for k, v in descriptor.items() if k not in ("model", "adapter", "prompt_version")}
    key["model"] = {k: v for k, v in descriptor["model"].items() if k != "path"}
    key["adapter"] = descriptor["adapter"]["sha256"] if descriptor.get("adapter") else None
    return key


def adapter_info(adapter: str | Path | None) -> dict | None:
    """{"path", "sha256"} of a LoRA adapter directory; sha256 is `adapter_content_hash`."""
    if not adapter:
        return None
    path = Path(adapter).expanduser()
    if not (path / "adapter_config.json").is_file():
        raise HarnessError(f"adapter={adapter}: no adapter_config.json there; give a PEFT LoRA adapter directory "
                           f"(e.g. <run>/train/adapter).")
    return {"path": str(path.resolve()), "sha256": adapter_content_hash(path)}


# adapter_config.json fields that say where or with what the adapter was made, not what it computes.
_CONFIG_NOT_CONTENT = ("base_model_name_or_path", "revision", "peft_version")
_CONFIG_SETS = ("target_modules", "exclude_modules", "modules_to_save")  # PEFT stores sets as lists


def adapter_content_hash(path: Path) -> str:
    """What the adapter computes, hashed: its canonical config and its tensors (name, dtype,
    shape, bytes, by name). Not hashed: training_args.bin (it embeds the output path), READMEs,
    tokenizer copies, the base model's path, and the order PEFT happened to write a set in; so
    two identical trainings hash the same wherever they ran."""
    import json

    config = json.loads((path / "adapter_config.json").read_text(encoding="utf-8"))
    config = {k: (sorted(v) if k in _CONFIG_SETS and isinstance(v, list) else v) for k, v in config.items()
              if k not in _CONFIG_NOT_CONTENT and v not in (None, {}, [])}
    digest = hashlib.sha256(b"factrl.adapter/1\0")
    digest.update(json.dumps(config, sort_keys=True, separators=(",", ":")).encode())
    weights = path / "adapter_model.safetensors"
    if weights.is_file():
        for name, dtype, shape, data in _safetensors(weights):
            digest.update(f"\0{name}\0{dtype}\0{shape}\0".encode())
            digest.update(data)
    else:  # an older PEFT's pickled adapter_model.bin: its bytes are all there is to hash
        for file in sorted(path.glob("adapter_model*.bin")):
            digest.update(file.read_bytes())
    return digest.hexdigest()


def _safetensors(path: Path):
    """(name, dtype, shape, raw bytes) of each tensor, sorted by name (the documented layout:
    8-byte little-endian header length, JSON header, data)."""
    import json

    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + size])
    base = 8 + size
    for name in sorted(k for k in header if k != "__metadata__"):
        start, end = header[name]["data_offsets"]
        yield name, header[name]["dtype"], header[name]["shape"], raw[base + start:base + end]


def recorded_generation(folder: Path, *, limit: int | None, predictions: str) -> dict:
    """The `generation` block for predictions scored again: their generation.json if present,
    else nulls (predictions made elsewhere), plus the limit and the predictions file."""
    from factrl.harness.core.rundir import read_json

    from .generate import DESCRIPTOR

    file = Path(folder) / DESCRIPTOR
    known = read_json(file) if file.is_file() else {
        "backend": None, "model": None, "adapter": None, "prompt_version": None, "prompt_hash": None, "decoding": None}
    return {**known, "limit": limit, "predictions": predictions}


def prompt_format(model_cfg: Any) -> dict:
    """The model-config fields that change the prompt text (they key the cache and resume):
    harness.core.prompts.prompt_variant plus the chat-template override and the dtype."""
    template = model_cfg.get("chat_template") if model_cfg is not None else None
    return {**prompt_variant(model_cfg), "dtype": model_cfg.get("dtype") if model_cfg is not None else None,
            "chat_template_sha256": hashlib.sha256(str(template).encode()).hexdigest()[:16] if template else None}


def _processes(settings: EvalSettings) -> dict:
    """Data-parallel generation changes which prompts share a batch (as the batch size does); one
    process adds nothing, so one-process descriptors stay what they were."""
    return {"processes": int(settings.processes)} if int(settings.processes) > 1 else {}


def backend_settings(settings: EvalSettings, cfg: Any, model_cfg: Any) -> dict:
    """What about the backend can change a completion (recorded, and part of the cache key): the
    registry's `generation` entry says (its `provenance`; evals/backends/<name>.py)."""
    return registry.get("generation", settings.backend).provenance(settings, cfg, model_cfg, _processes(settings))
