"""`evaluate`: generate (resumably) and score every set of `cfg.eval`, write per-set results.

Layout under `out_dir` (a run's `eval/`):
    <set>/generation.json    what produced the generations (backend, model, adapter, prompt, decoding)
    <set>/generations.jsonl  one line per finished sample, appended as they finish
    <set>/samples.jsonl      one line per sample with the scorer's fields
    <set>/metrics.json       factrl.eval.metrics/1 (docs/CONTRACTS.md)
and the run-level summary (factrl.run.metrics/1) is returned for the caller to write.
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from factrl.harness.config import as_container
from factrl.harness.errors import ConfigError, HarnessError
from factrl.harness.models import ModelIdentity, cache_dir
from factrl.harness.prompts import PROMPT_VERSION, prompt_hash, prompt_variant, system_prompt
from factrl.harness.rundir import write_json

from .backends import BACKENDS, Decoding, build_backend
from .cache import ResponseCache
from .generate import SetJob, generate_sets, read_generations
from .metrics import aggregate, metrics_file, run_metrics
from .predictions import align, write_jsonl
from .scorers import get_scorer
from .sets import EvalSet, get_spec, load_set

log = logging.getLogger("factrl.evals")




@dataclass
class EvalSettings:
    """The `eval` config group, with defaults for keys a caller's config may lack (see configs/eval/)."""

    sets: list[str]
    backend: str = "hf"
    batch_size: int = 16
    limit: int | None = None
    max_new_tokens: int | None = None
    scorer: str = "default"
    truthfulqa_no_comment: bool = False
    truthfulqa_content_guard: bool = True
    anti_loop: bool = False
    cache: bool = True
    data_dir: str | None = None
    data: dict = field(default_factory=dict)
    aliases: dict = field(default_factory=dict)
    revision: dict = field(default_factory=dict)
    vllm: dict = field(default_factory=dict)
    openai: dict = field(default_factory=dict)

    @classmethod
    def from_config(cls, node: Any) -> "EvalSettings":
        raw = as_container(node) or {}
        known = {k: v for k, v in raw.items() if k in cls.__dataclass_fields__ and v is not None}
        sets = known.get("sets")
        if isinstance(sets, str):
            known["sets"] = [sets]
        if not known.get("sets"):
            raise ConfigError("eval.sets is empty: name at least one set (e.g. eval=closed-book or eval.sets=[demo]).")
        settings = cls(**known)
        settings.validate()
        return settings

    def validate(self) -> None:
        for name in self.sets:
            get_spec(name)  # unknown names fail with a suggestion
        if self.backend not in BACKENDS:
            raise ConfigError(f"eval.backend={self.backend!r}: use one of {', '.join(BACKENDS)}.")
        if self.limit is not None and int(self.limit) < 1:
            raise ConfigError(f"eval.limit={self.limit}: give a positive number of questions, or null for all.")
        if self.batch_size < 1:
            raise ConfigError(f"eval.batch_size={self.batch_size}: must be at least 1.")
        scorer = get_scorer(self.scorer, truthfulqa_no_comment=self.truthfulqa_no_comment,
                            truthfulqa_content_guard=self.truthfulqa_content_guard)
        for name in self.sets:
            scorer.metrics(get_spec(name).task)  # e.g. corver-official refuses multi-hop sets here


def stable_key(descriptor: dict) -> dict:
    """The descriptor without machine-local paths: what resume checks and the cache key compare."""
    key = {k: v for k, v in descriptor.items() if k not in ("model", "adapter", "prompt_version")}
    key["model"] = {k: v for k, v in descriptor["model"].items() if k != "path"}
    key["adapter"] = descriptor["adapter"]["sha256"] if descriptor.get("adapter") else None
    return key


def adapter_info(adapter: str | Path | None) -> dict | None:
    """{"path", "sha256"} of a LoRA adapter directory (hash of its file names and bytes)."""
    if not adapter:
        return None
    path = Path(adapter).expanduser()
    if not (path / "adapter_config.json").is_file():
        raise HarnessError(f"adapter={adapter}: no adapter_config.json there; give a PEFT LoRA adapter directory "
                           f"(e.g. <run>/train/adapter).")
    digest = hashlib.sha256()
    for file in sorted(p for p in path.iterdir() if p.is_file()):
        digest.update(file.name.encode())
        digest.update(file.read_bytes())
    return {"path": str(path.resolve()), "sha256": digest.hexdigest()}


def evaluate(cfg: Any, *, identity: ModelIdentity, adapter: str | Path | None = None, out_dir: str | Path,
             model: Any = None, tokenizer: Any = None) -> dict:
    """Generate and score every set of `cfg.eval`; returns the run-level metrics dict.

    cfg: the composed root config (uses cfg.eval, cfg.model, cfg.seed, cfg.device).
    identity: `factrl.harness.models.resolve(cfg.model)`.
    adapter: a LoRA adapter directory evaluated on top of the model, or None.
    model, tokenizer: optional already-loaded model (with the adapter applied) for backend=hf,
        so a training run does not load its weights twice; `adapter` then only describes it.
    """
    settings = EvalSettings.from_config(cfg.get("eval"))
    out = Path(out_dir)
    model_cfg = cfg.get("model")
    seed = cfg.get("seed")
    decoding = Decoding.from_config(model_cfg.get("decoding") if model_cfg is not None else None,
                                    max_new_tokens=settings.max_new_tokens, seed=seed)
    system = system_prompt(settings.anti_loop)
    adapter_meta = adapter_info(adapter)
    backend_settings = _backend_settings(settings, cfg, model_cfg)
    descriptor = {"backend": settings.backend, "backend_settings": backend_settings, "model": identity.to_dict(),
                  "adapter": adapter_meta, "prompt_version": PROMPT_VERSION, "prompt_hash": prompt_hash(system),
                  "anti_loop": settings.anti_loop, "prompt_format": _prompt_format(model_cfg),
                  "decoding": decoding.to_dict()}

    sets = [load_set(name, data=settings.data.get(name), data_dir=settings.data_dir,
                     aliases=settings.aliases.get(name), revision=settings.revision.get(name), limit=settings.limit)
            for name in settings.sets]
    jobs = [SetJob(s, out / s.name) for s in sets]
    cache = None
    if settings.cache and decoding.greedy:  # sampled generations are never cached
        cache = ResponseCache(cache_dir() / "eval-cache.sqlite", stable_key(descriptor))

    def make_backend():
        return build_backend(settings.backend, identity, model_cfg, decoding, adapter=adapter,
                             settings=settings.vllm if settings.backend == "vllm" else settings.openai,
                             batch_size=settings.batch_size, device=cfg.get("device"), model=model,
                             tokenizer=tokenizer)

    try:
        counts = generate_sets(jobs, system=system, descriptor=descriptor, make_backend=make_backend, cache=cache,
                               compare=stable_key)
    finally:
        if cache is not None:
            cache.close()

    scorer = get_scorer(settings.scorer, truthfulqa_no_comment=settings.truthfulqa_no_comment,
                        truthfulqa_content_guard=settings.truthfulqa_content_guard)
    results = {}
    for job in jobs:
        rows = {k: v for k, v in read_generations(job.path).items() if job.eval_set.index(k) is not None}
        generation = {**descriptor, "limit": settings.limit, "counts": counts.get(job.eval_set.name)}
        results[job.eval_set.name] = score_set(job.eval_set, rows, scorer, generation, job.folder, str(job.path))
    return run_metrics(results)


def recorded_generation(folder: Path, *, limit: int | None, predictions: str) -> dict:
    """The `generation` block for predictions scored again: their generation.json if present,
    else nulls (predictions made elsewhere), plus the limit and the predictions file."""
    from factrl.harness.rundir import read_json

    from .generate import DESCRIPTOR

    file = Path(folder) / DESCRIPTOR
    known = read_json(file) if file.is_file() else {
        "backend": None, "model": None, "adapter": None, "prompt_version": None, "prompt_hash": None, "decoding": None}
    return {**known, "limit": limit, "predictions": predictions}


def score_set(eval_set: EvalSet, rows: dict[str, dict], scorer, generation: dict, folder: Path, where: str) -> dict:
    """Score aligned predictions, write samples.jsonl and metrics.json into `folder`; returns the metrics doc."""
    completions = align(eval_set, rows, where)
    samples = scorer.score(eval_set, completions)
    metrics = aggregate(samples, scorer.metrics(eval_set.task))
    doc = metrics_file(set_info=eval_set.describe(), scorer=scorer.describe(), generation=generation, metrics=metrics)
    write_jsonl(folder / "samples.jsonl", samples.rows())
    write_json(folder / "metrics.json", doc)
    headline = ", ".join(f"{k} {v['value']:.4f}" for k, v in list(metrics.items())[:3])
    log.info("%s (%d questions, scorer %s %s): %s", eval_set.name, eval_set.count, scorer.name, scorer.version,
             headline)
    return doc


def _prompt_format(model_cfg: Any) -> dict:
    """The model-config fields that change the prompt text (they key the cache and resume):
    harness.prompts.prompt_variant plus the chat-template override and the dtype."""
    template = model_cfg.get("chat_template") if model_cfg is not None else None
    return {**prompt_variant(model_cfg), "dtype": model_cfg.get("dtype") if model_cfg is not None else None,
            "chat_template_sha256": hashlib.sha256(str(template).encode()).hexdigest()[:16] if template else None}


def _backend_settings(settings: EvalSettings, cfg: Any, model_cfg: Any) -> dict:
    """What about the backend can change a completion (recorded, and part of the cache key)."""
    if settings.backend == "hf":
        import torch

        from factrl.harness.models import torch_dtype

        device = cfg.get("device") or "auto"
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = torch_dtype(model_cfg.get("dtype") if model_cfg is not None else None)
        return {"device": device, "dtype": str(dtype).removeprefix("torch."), "batch_size": settings.batch_size}
    if settings.backend == "vllm":
        return {k: settings.vllm.get(k) for k in ("max_model_len", "tensor_parallel_size", "enforce_eager")}
    # Written to metrics.json and the leaderboard: no credentials in the URL, no secret-looking keys.
    from urllib.parse import urlsplit, urlunsplit

    from factrl.harness.config import redact

    url = settings.openai.get("base_url")
    if url:
        parts = urlsplit(str(url))
        netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
        url = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    return {"base_url": url, "model": settings.openai.get("model"),
            "extra_body": redact(dict(settings.openai.get("extra_body") or {}))}
