"""`open_judge(cfg.judge, run_dir=...)`: a ready, checked `Judge` from the judge config group.

- `embedded`: resolves the embedded model (or a local directory), starts `transformers serve`
  on it (embedded.py) and records the judge as a stand-in with its weights' hash.
- `openai`: any OpenAI-compatible server at `judge.base_url` serving `judge.model`; the API key
  comes from the environment variable named by `judge.api_key_env` (a dummy when unset, which
  local servers accept).
- `none`: a ConfigError for methods that need a judge.

The judge is checked (`Judge.check()`) before it is returned unless `check=False`, so a URL
that does not answer or a model the server does not know stops the run before training.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from factrl.harness.config import redact_url
from factrl.harness.errors import ConfigError

from .cache import JudgeCache
from .client import Judge, prompt_versions
from .settings import JudgeSettings, read_settings

SERVER_LOG = "judge_server.log"


def _cache(settings: JudgeSettings) -> JudgeCache | None:
    if settings.cache is None:
        return None
    if settings.cache == "auto":
        from factrl.harness.models import writable_cache_dir

        return JudgeCache(writable_cache_dir() / "judge" / "cache.sqlite3")
    return JudgeCache(settings.cache)


def _api_key(settings: JudgeSettings) -> str:
    # Local servers take any key; the SDK refuses an empty one.
    return (os.environ.get(settings.api_key_env) if settings.api_key_env else None) or "EMPTY"


def _common(settings: JudgeSettings) -> dict[str, Any]:
    return {"temperature": settings.temperature, "max_tokens": settings.max_tokens,
            "max_reasks": settings.max_reasks, "prompts": prompt_versions()}


def _embedded_identity(name: str) -> Any:
    from factrl.harness.models import EMBEDDED, resolve

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
    component = {"kind": "judge", "backend": "embedded", "model": identity.name, "revision": identity.revision,
                 "stand_in": settings.stand_in, "label": f"{identity.name} judge (transformers serve)",
                 "sha256": identity.sha256, "server": "transformers serve", **_common(settings)}
    if settings.note:
        component["note"] = settings.note
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
    component = {"kind": "judge", "backend": "openai", "model": settings.model, "revision": None,
                 "stand_in": settings.stand_in, "label": f"{settings.model} judge", "base_url": url,
                 **_common(settings)}
    if settings.note:
        component["note"] = settings.note
    return Judge(settings, base_url=str(settings.base_url), served_model=str(settings.model),
                 endpoint_id=url.rstrip("/"), component=component, api_key=_api_key(settings), run_dir=run_dir,
                 cache=_cache(settings))


def open_judge(judge_cfg: Any, *, run_dir: str | Path | None = None, check: bool = True) -> Judge:
    """The judge `judge_cfg` describes, started (embedded) and checked; close it (or use `with`)."""
    settings = read_settings(judge_cfg)
    if settings.backend == "none":
        raise ConfigError("this method needs a judge but judge=none; use judge=embedded (offline stand-in) or "
                          "judge=openai judge.base_url=URL judge.model=NAME.")
    run_path = Path(run_dir) if run_dir is not None else None
    judge = _open_embedded(settings, run_path) if settings.backend == "embedded" else _open_openai(settings, run_path)
    if check:
        try:
            judge.check()
        except BaseException:
            judge.close()
            raise
    return judge
