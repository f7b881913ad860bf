"""`evaluate`: generate (resumably) and score every set of `cfg.eval`, write per-set results.

Layout under `out_dir` (a run's `eval/`):
    <set>/generation.json    what produced the generations (provenance.describe_generation)
    <set>/generations.jsonl  one line per finished sample, appended as they finish
    <set>/samples.jsonl      one line per sample with the scorer's fields (results.score_set)
    <set>/metrics.json       factrl.eval.metrics/1 (docs/CONTRACTS.md)
and the run-level summary (factrl.run.metrics/1) is returned for the caller to write.
Settings are checked first (settings.EvalSettings), before any data or model is loaded.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from factrl.harness.services.models import ModelIdentity, writable_cache_dir
from factrl.harness.core.prompts import addition_of, system_prompt

from .backends import build_backend
from .backends.settings import decoding_of
from .cache import ResponseCache
from .generate import SetJob, Shard, generate_sets, read_generations
from .judged import JudgedEvals
from .metrics import run_metrics
from .provenance import describe_generation, stable_key
from .results import score_set
from .settings import EvalSettings
from .sets import load_set


def evaluate(cfg: Any, *, identity: ModelIdentity, adapter: str | Path | None = None, out_dir: str | Path,
             model: Any = None, tokenizer: Any = None, shard: Shard | None = None) -> dict:
    """Generate and score every set of `cfg.eval`; returns the run-level metrics dict.

    cfg: the composed root config (uses cfg.eval, cfg.model, cfg.seed, cfg.device).
    identity: `factrl.harness.services.models.resolve(cfg.model)`.
    adapter: a LoRA adapter directory evaluated on top of the model, or None.
    model, tokenizer: optional already-loaded model (with the adapter applied) for backend=hf,
        so a training run does not load its weights twice; `adapter` then only describes it.
    shard: one data-parallel generation process (generate.Shard): it generates its slice into
        `out_dir` and returns {"counts": ...}; nothing is scored (the merged evaluation scores).
    """
    settings = EvalSettings.from_config(cfg.get("eval"))
    out = Path(out_dir)
    model_cfg = cfg.get("model")
    decoding = decoding_of(model_cfg, max_new_tokens=settings.max_new_tokens, seed=cfg.get("seed"))
    # The run's method may add to the shared prompt (Method.prompt_addition): as in its training.
    system = system_prompt(settings.anti_loop, addition=addition_of(cfg)[0])
    descriptor = describe_generation(settings, cfg, identity, decoding, adapter)

    sets = [load_set(name, data=settings.data.get(name), data_dir=settings.data_dir,
                     aliases=settings.aliases.get(name), revision=settings.revision.get(name), limit=settings.limit)
            for name in settings.sets]
    jobs = [SetJob(s, out / s.name) for s in sets]
    # The judge, evidence store and masked LM of the judged evaluations open before generation,
    # so a missing store or an uncached model fails now rather than after generating.
    if shard is not None:
        return {"counts": _generate(cfg, settings, jobs, descriptor, system, identity, model_cfg, decoding, adapter,
                                    model, tokenizer, shard)}
    judged = JudgedEvals.open(settings, cfg, out)
    try:
        return _generate_and_score(cfg, settings, jobs, descriptor, system, identity, model_cfg, decoding, adapter,
                                   model, tokenizer, judged)
    finally:
        if judged is not None:
            judged.close()


def _generate_and_score(cfg, settings, jobs, descriptor, system, identity, model_cfg, decoding, adapter, model,
                        tokenizer, judged) -> dict:
    counts = _generate(cfg, settings, jobs, descriptor, system, identity, model_cfg, decoding, adapter, model,
                       tokenizer)
    scorer = settings.make_scorer()
    results = {}
    for job in jobs:
        rows = {k: v for k, v in read_generations(job.path).items() if job.eval_set.index(k) is not None}
        generation = {**descriptor, "limit": settings.limit, "counts": counts.get(job.eval_set.name)}
        results[job.eval_set.name] = score_set(job.eval_set, rows, scorer, generation, job.folder, str(job.path),
                                               judged=judged)
    return run_metrics(results)


def _generate(cfg, settings, jobs, descriptor, system, identity, model_cfg, decoding, adapter, model, tokenizer,
              shard: Shard | None = None) -> dict:
    cache = None
    if settings.cache and decoding.greedy:  # sampled generations are never cached
        cache = ResponseCache(writable_cache_dir() / "eval-cache.sqlite", stable_key(descriptor))

    def make_backend():
        return build_backend(settings.backend, identity, model_cfg, decoding, adapter=adapter,
                             settings=getattr(settings, settings.backend, None),  # eval.vllm, eval.openai; hf has none
                             batch_size=settings.batch_size, device=cfg.get("device"), model=model,
                             tokenizer=tokenizer, hf_fast=settings.hf_fast, hf_shared_prefix=settings.hf_shared_prefix)

    try:
        return generate_sets(jobs, system=system, descriptor=descriptor, make_backend=make_backend, cache=cache,
                             compare=stable_key, shard=shard)
    finally:
        if cache is not None:
            cache.close()
