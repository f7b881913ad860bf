"""Random-weight models saved to disk, for the loaders that read weights only from disk (vLLM).

`model.source=random` builds weights in memory (models.load_model via shapes.build_random);
vLLM cannot take such a model, so `for_disk_loaders` saves it once per identity and device.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from .loader import RANDOM_MARKER, _build_random, cache_dir, load_tokenizer, log, saved_random
from .shapes import torch_dtype


def save_random(identity: Any, model_cfg: Any, root: Any = None) -> Any:
    """A random model (`model.source=random`) saved once with its tokenizer, for loaders that
    read weights from disk only (vLLM: TRL's colocated engine loads `model.name_or_path`, which
    `from_config` leaves empty; the vLLM evaluation backend loads `identity.path`, which for a
    random model is its tokenizer's folder, i.e. another model). Returns the identity with `path`
    set to the saved folder (same id and hash); `models.load_model` then loads those weights.

    The folder is keyed by the identity's hash and the device the weights were made on (CPU and
    CUDA generators give different weights for one seed); written in a staging folder and
    renamed, so concurrent ranks and jobs share one copy."""
    import torch

    if model_cfg is None or model_cfg.get("source") != "random" or model_cfg.get("path") or saved_random(identity):
        return identity

    device = "cuda" if torch.cuda.is_available() else "cpu"
    base = Path(root) if root is not None else cache_dir() / "models"
    name = "".join(c if c.isalnum() or c in "-_." else "-" for c in identity.name)
    target = base / f"random-{name}-{identity.sha256[:12]}-{device}"
    if not (target / RANDOM_MARKER).is_file():
        log.info("saving the random %s model to %s (vLLM loads weights from disk)", identity.name, target)
        model = _build_random(identity, model_cfg, torch_dtype(model_cfg.get("dtype")), device)
        tokenizer = load_tokenizer(identity, model_cfg)
        base.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=base))
        try:
            model.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            (staging / RANDOM_MARKER).write_text(json.dumps({"identity": identity.to_dict(), "device": device},
                                                            indent=2), encoding="utf-8")
            del model
            try:
                os.rename(staging, target)
            except OSError:
                if not (target / RANDOM_MARKER).is_file():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return dataclasses.replace(identity, path=str(target))


def for_disk_loaders(identity: Any, cfg: Any) -> Any:
    """`save_random` when this run hands the model to vLLM (train.use_vllm or eval.backend=vllm)."""
    vllm = cfg.get("train") is not None and bool(cfg.train.use_vllm)  # composed: every key present
    vllm = vllm or (cfg.get("eval") is not None and str(cfg.eval.backend) == "vllm")
    return save_random(identity, cfg.model) if vllm else identity
