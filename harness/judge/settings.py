"""The `judge` config group (configs/judge/{none,embedded,openai}.yaml) read into checked settings.

Each bad value is a one-line ConfigError naming the field (`judge.<field>`) and what to set.
The API key itself is never part of the settings: only the *name* of its environment
variable (`api_key_env`); the key is read when the judge opens and handed to the SDK only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from factrl.harness.config import as_container
from factrl.harness.errors import ConfigError

BACKENDS = ("none", "embedded", "openai")


@dataclass(frozen=True)
class JudgeSettings:
    backend: str
    model: str | None  # served model id (openai) / embedded model name or directory (embedded)
    base_url: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout: float = 120.0
    max_retries: int = 2
    backoff: float = 0.5
    concurrency: int = 8
    max_reasks: int = 1
    temperature: float = 0.0
    max_tokens: int = 1024
    cache: str | None = "auto"
    max_failed_share: float = 0.2
    stand_in: bool = False
    note: str | None = None
    startup_timeout: float = 180.0
    threads: int = 1
    device: str = "cpu"
    dtype: str = "float32"


_DEFAULTS = JudgeSettings(backend="none", model=None)


def _number(data: dict, key: str, kind: type, *, low: float, high: float | None = None) -> Any:
    value = data.get(key, getattr(_DEFAULTS, key))  # an absent field takes the default
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"judge.{key}={value!r} is not a number; set a {kind.__name__}.") from None
    if number < low or (high is not None and number > high):
        bound = f"between {low:g} and {high:g}" if high is not None else f">= {low:g}"
        raise ConfigError(f"judge.{key}={value!r} is out of range; set a value {bound}.")
    return number


def read_settings(judge_cfg: Any) -> JudgeSettings:
    data = dict(as_container(judge_cfg) or {})
    backend = str(data.get("backend") or "none")
    if backend not in BACKENDS:
        raise ConfigError(f"judge.backend={backend!r} is not valid; use judge=embedded (offline stand-in) or "
                          f"judge=openai judge.base_url=URL judge.model=NAME.")
    if backend == "openai":
        if not data.get("base_url") or str(data.get("base_url")) == "???":
            raise ConfigError("judge=openai needs judge.base_url (e.g. http://127.0.0.1:8000/v1 for `vllm serve`).")
        if not data.get("model") or str(data.get("model")) == "???":
            raise ConfigError("judge=openai needs judge.model: the model id the server serves (see GET /v1/models).")
    if backend == "embedded" and not data.get("model"):
        raise ConfigError("judge=embedded needs judge.model: smollm2-135m, tiny-llama or a local model directory.")
    stand_in = data.get("stand_in", backend == "embedded")
    if not isinstance(stand_in, bool):
        raise ConfigError(f"judge.stand_in={stand_in!r}: set true or false.")
    if stand_in and not data.get("note"):
        raise ConfigError("judge.stand_in=true needs judge.note: say which judge it stands in for.")
    cache = data.get("cache", "auto")
    key_env = data.get("api_key_env", _DEFAULTS.api_key_env)  # null: a local server that needs no key
    return JudgeSettings(
        backend=backend, model=str(data["model"]) if data.get("model") else None,
        base_url=str(data["base_url"]) if data.get("base_url") else None,
        api_key_env=str(key_env) if key_env else None,
        timeout=_number(data, "timeout", float, low=0.01),
        max_retries=_number(data, "max_retries", int, low=0, high=10),
        backoff=_number(data, "backoff", float, low=0.0),
        concurrency=_number(data, "concurrency", int, low=1, high=1024),
        max_reasks=_number(data, "max_reasks", int, low=0, high=5),
        temperature=_number(data, "temperature", float, low=0.0, high=2.0),
        max_tokens=_number(data, "max_tokens", int, low=1),
        cache=None if cache in (None, "", False, "null", "none") else str(cache),
        max_failed_share=_number(data, "max_failed_share", float, low=0.0, high=1.0),
        stand_in=stand_in, note=str(data["note"]) if data.get("note") else None,
        startup_timeout=_number(data, "startup_timeout", float, low=1.0),
        threads=_number(data, "threads", int, low=1),
        device=str(data.get("device") or "cpu"), dtype=str(data.get("dtype") or "float32"),
    )
