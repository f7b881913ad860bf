"""`open_judge(cfg.judge, run_dir=...)`: a ready, checked `Judge` from the judge config group.

- `embedded`: resolves the embedded model (or a local directory), starts `transformers serve`
  on it (embedded.py) and records the judge as a stand-in with its weights' hash.
- `openai`: any OpenAI-compatible server at `judge.base_url` serving `judge.model`; the API key
  comes from the environment variable named by `judge.api_key_env` (a dummy when unset, which
  local servers accept).
- `reference`: no server; each prompt's reference answer, in-process (reference.py).
- `none`: a ConfigError for methods that need a judge.

Every judge's component records the served model, the paper's judge (`judge.paper_model`) and
whether it is a substitute for it (provenance.py).

The judge is checked (`Judge.check()`) before it is returned unless `check=False`, so a URL
that does not answer or a model the server does not know stops the run before training.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from ...core.config_values import redact_url
from ...core.errors import ConfigError
from ...core.registry import get

from .cache import JudgeCache
from .client import Judge
from .provenance import judge_component
from .settings import JudgeSettings, read_settings
from .spec import JudgePrompt

SERVER_LOG = "judge_server.log"


def _cache(settings: JudgeSettings) -> JudgeCache | None:
    if settings.cache is None:
        return None
    if settings.cache == "auto":
        from ..models import writable_cache_dir

        return JudgeCache(writable_cache_dir() / "judge" / "cache.sqlite3")
    return JudgeCache(settings.cache)


def _api_key(settings: JudgeSettings) -> str:
    # Local servers take any key; the SDK refuses an empty one.
    return (os.environ.get(settings.api_key_env) if settings.api_key_env else None) or "EMPTY"


def _common(settings: JudgeSettings) -> dict[str, Any]:
    """The group's decoding (for prompts that leave it unset) and re-ask bound."""
    return {"temperature": settings.temperature, "top_p": settings.top_p, "max_tokens": settings.max_tokens,
            "max_tokens_cap": settings.max_tokens_cap, "max_reasks": settings.max_reasks}


def _embedded_identity(name: str) -> Any:
    from ..models import EMBEDDED, resolve

    if name in EMBEDDED:
        return resolve({"name": name, "source": "embedded"})
    path = Path(os.path.expanduser(name))
    if path.is_dir():
        return resolve({"name": path.name, "path": str(path)})
    raise ConfigError(f"judge.model={name!r} is neither an embedded model ({', '.join(EMBEDDED)}) nor a local "
                      f"model directory; set one of them.")


def _open_embedded(settings: JudgeSettings, run_dir: Path | None) -> Judge:
    from .embedded import EmbeddedServer

    identity = _embedded_identity(str(settings.model))
    log_path = run_dir / SERVER_LOG if run_dir is not None else None
    server = EmbeddedServer(identity.path, startup_timeout=settings.startup_timeout, log_path=log_path,
                            threads=settings.threads, device=settings.device, dtype=settings.dtype)
    base_url = server.start()
    # The embedded judge is a stand-in whatever judge.stand_in says: no paper used a local 135M judge.
    component = judge_component(backend="embedded", model=identity.name, revision=identity.revision,
                                served_model=identity.name, paper_model=settings.paper_model, stand_in=True,
                                label=f"{identity.name} judge (transformers serve)", note=settings.note
                                or "a local model stands in for the paper's judge", sha256=identity.sha256,
                                server="transformers serve", **_common(settings))
    try:
        # The port changes every run, so the cache keys on the weights, not the URL.
        return Judge(settings, base_url=base_url, served_model=identity.path,
                     endpoint_id=f"embedded:{identity.id}@{identity.sha256}", component=component,
                     api_key=_api_key(settings), run_dir=run_dir, cache=_cache(settings), server=server)
    except BaseException:
        server.stop()
        raise


def _open_openai(settings: JudgeSettings, run_dir: Path | None) -> Judge:
    url = redact_url(str(settings.base_url))
    component = judge_component(backend="openai", model=settings.model, served_model=settings.model,
                                paper_model=settings.paper_model, stand_in=settings.stand_in,
                                label=f"{settings.model} judge", note=settings.note, base_url=url,
                                **_common(settings))
    return Judge(settings, base_url=str(settings.base_url), served_model=str(settings.model),
                 endpoint_id=url.rstrip("/"), component=component, api_key=_api_key(settings), run_dir=run_dir,
                 cache=_cache(settings))


# The registry's `judge` entries: (settings, run_dir, evidence) -> an unopened judge.
def no_judge(settings: Any, run_dir: Path | None, evidence: Any) -> Any:
    raise ConfigError("this method needs a judge but judge=none; use judge=reference (rule-based stand-in), "
                      "judge=embedded (a local model) or judge=openai judge.base_url=URL judge.model=NAME.")


def open_reference(settings: Any, run_dir: Path | None, evidence: Any) -> Any:
    from .reference import ReferenceJudge

    return ReferenceJudge(settings, run_dir=run_dir, evidence=evidence)


def open_embedded(settings: JudgeSettings, run_dir: Path | None, evidence: Any) -> Judge:
    return _open_embedded(settings, run_dir)


def open_openai(settings: JudgeSettings, run_dir: Path | None, evidence: Any) -> Judge:
    return _open_openai(settings, run_dir)


def open_judge(judge_cfg: Any, *, run_dir: str | Path | None = None, check: bool = True, evidence: Any = None,
               prompts: Sequence[JudgePrompt] = ()) -> Any:
    """The judge `judge_cfg` describes, started (embedded) and checked; close it (or use `with`).

    `prompts`: the prompts the caller will ask, registered so the component lists them from the
    start (and judge=reference refuses one without a reference answer before any work).
    `evidence`: the run's evidence store, for the reference answers that read it."""
    settings = read_settings(judge_cfg)
    run_path = Path(run_dir) if run_dir is not None else None
    judge = get("judge", settings.backend)(settings, run_path, evidence)
    try:
        judge.register(*prompts)
        if check:
            judge.check()
    except BaseException:
        judge.close()
        raise
    return judge
