"""Find an NLI model's files offline-first, hash its weights, and pick its device and dtype."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import ConfigError, ModelNotFoundError
from ...core.hashing import sha256_file


@dataclass(frozen=True)
class Located:
    """Where a model's files are: `path` on disk, `model` / `revision` as recorded."""

    model: str
    revision: str | None
    path: Path
    local: bool  # given as a directory (not a hub id): cannot be verified as the hub model


def is_local(model: str) -> bool:
    """A directory that exists, or anything path-shaped (so a typo gets the directory error)."""
    return Path(os.path.expanduser(model)).is_dir() or model.startswith((".", "/", "~"))


def locate(model: str, revision: str | None, option: str = "nli.model", standin: str = "nli.backend=standin") -> Located:
    """A local directory as is; a hub id from the local cache (downloaded only when online).
    `standin` is the override the error suggests for a recorded offline stand-in."""
    if is_local(model):
        path = Path(os.path.expanduser(model)).resolve()
        if not (path / "config.json").is_file():
            raise ModelNotFoundError(f"{option}={model}: no config.json there. Give a directory in Hugging Face "
                                     f"layout (config.json, tokenizer files, *.safetensors).")
        return Located(model, None, path, True)
    from huggingface_hub import snapshot_download

    try:
        return Located(model, revision, Path(snapshot_download(model, revision=revision, local_files_only=True)),
                       False)
    except Exception:  # noqa: BLE001 - not cached; try the hub below unless offline
        pass
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        reason = "HF_HUB_OFFLINE=1 is set"
    else:
        try:
            path = snapshot_download(model, revision=revision,
                                     allow_patterns=["*.json", "*.safetensors", "*.model", "*.py", "*.txt"])
            return Located(model, revision, Path(path), False)
        except Exception as err:  # noqa: BLE001
            reason = f"the hub could not be reached ({type(err).__name__})"
    at, flag = (f"@{revision}", f" --revision {revision}") if revision else ("", "")
    raise ModelNotFoundError(
        f"{option}={model}{at} is not in the local Hugging Face cache and {reason}. Fetch it on a "
        f"connected machine (`huggingface-cli download {model}{flag}`) and copy the cache, "
        f"give a local directory as {option}, or use {standin} (a recorded stand-in)."
    )


def weights_sha256(path: Path) -> str:
    """SHA-256 over the weight files' names and bytes (what a result says it scored with)."""
    import hashlib

    files = sorted(path.glob("*.safetensors")) or sorted(path.glob("*.bin"))
    if not files:
        raise ModelNotFoundError(f"{path}: no *.safetensors or *.bin weight file; the NLI model is incomplete.")
    digest = hashlib.sha256()
    for file in files:
        digest.update(f"{file.name}:{sha256_file(file)}\n".encode())
    return digest.hexdigest()


def pick_device(device: str) -> str:
    """"auto" follows CUDA when present (the scorer puts its inputs on the model's device)."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"nli.device={device} but no CUDA device is visible; use nli.device=auto or cpu.")
    return device


def resolve_dtype(name: str, device: str) -> str:
    """The weights' dtype name: `auto` is bfloat16 on CUDA and float32 on CPU."""
    if name == "auto":
        return "bfloat16" if str(device).startswith("cuda") else "float32"
    return name


def torch_dtype(name: str):
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]
