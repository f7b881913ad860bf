"""The `judge` config group (configs/judge/{none,embedded,openai}.yaml) read into checked settings.

Each bad value is a one-line ConfigError naming the field (`judge.<field>`) and what to set;
an absent field takes the value of the backend's own file (configs/judge/<backend>.yaml).
The API key itself is never part of the settings: only the *name* of its environment
variable (`api_key_env`); the key is read when the judge opens and handed to the SDK only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from factrl.harness.errors import ConfigError
from factrl.harness.settings import Settings, defaults_from_yaml, in_range, parse, plain

BACKENDS = ("none", "embedded", "openai")
EMBEDDED_ONLY = ("startup_timeout", "threads", "device", "dtype")  # options of the local server


@dataclass(frozen=True)
class JudgeSettings(Settings):
    """`judge.*` of judge=embedded or judge=openai. The defaults are that option's file,
    configs/judge/<backend>.yaml, so a judge built from a dict (`open_judge({"backend":
    "openai", ...})`) behaves as `judge=openai` does."""

    OWNER = "judge"

    backend: str
    model: str | None  # served model id (openai) / embedded model name or directory (embedded)
    base_url: str | None
    api_key_env: str | None  # the *name* of the variable holding the key; None: a local server
    timeout: float
    max_retries: int
    backoff: float
    concurrency: int
    max_reasks: int
    temperature: float
    max_tokens: int
    cache: str | None  # auto | a path | None (off)
    max_failed_share: float
    stand_in: bool
    note: str | None
    # embedded only (None for judge=openai, which has no local server)
    startup_timeout: float | None = None
    threads: int | None = None
    device: str | None = None
    dtype: str | None = None

    def __post_init__(self) -> None:
        if self.backend not in ("embedded", "openai"):
            raise ValueError(f"backend={self.backend!r} is not valid; use judge=embedded (offline stand-in) or "
                             f"judge=openai judge.base_url=URL judge.model=NAME.")
        in_range("timeout", self.timeout, 0.01)
        in_range("max_retries", self.max_retries, 0, 10)
        in_range("backoff", self.backoff, 0.0)
        in_range("concurrency", self.concurrency, 1, 1024)
        in_range("max_reasks", self.max_reasks, 0, 5)
        in_range("temperature", self.temperature, 0.0, 2.0)
        in_range("max_tokens", self.max_tokens, 1)
        in_range("max_failed_share", self.max_failed_share, 0.0, 1.0)
        if self.stand_in and not self.note:
            raise ValueError("stand_in=true needs judge.note: say which judge it stands in for.")
        if self.backend == "embedded":
            for key in EMBEDDED_ONLY:
                if getattr(self, key) is None:
                    raise ValueError(f"{key}: missing; judge=embedded needs it (configs/judge/embedded.yaml)")
            in_range("startup_timeout", self.startup_timeout, 1.0)
            in_range("threads", self.threads, 1)
        else:
            for key in EMBEDDED_ONLY:
                if getattr(self, key) is not None:
                    raise ValueError(f"{key} applies only to judge=embedded (its local server); remove it")
        if self.cache in ("", "null", "none"):
            object.__setattr__(self, "cache", None)

    @classmethod
    def from_mapping(cls, mapping: Any = None, *, owner: str | None = None, **changes: Any) -> "JudgeSettings":
        """As `read_settings` (the defaults depend on the backend)."""
        return read_settings({**dict(plain(mapping) or {}), **changes})


@dataclass(frozen=True)
class NoJudgeSettings(Settings):
    """judge=none (configs/judge/none.yaml): no judge; methods that need one refuse it."""

    OWNER = "judge"
    DEFAULTS = "judge/none.yaml"

    backend: str
    model: str | None


def read_settings(judge_cfg: Any) -> JudgeSettings | NoJudgeSettings:
    """The checked settings of a `judge` node or dict, over the defaults of its backend's file."""
    data = dict(plain(judge_cfg) or {})
    backend = str(data.get("backend") or "none")
    if backend not in BACKENDS:
        raise ConfigError(f"judge.backend={backend!r} is not valid; use judge=embedded (offline stand-in) or "
                          f"judge=openai judge.base_url=URL judge.model=NAME.")
    if backend == "none":
        return NoJudgeSettings.from_mapping(data)
    if backend == "openai":
        if not data.get("base_url") or str(data.get("base_url")) == "???":
            raise ConfigError("judge=openai needs judge.base_url (e.g. http://127.0.0.1:8000/v1 for `vllm serve`).")
        if not data.get("model") or str(data.get("model")) == "???":
            raise ConfigError("judge=openai needs judge.model: the model id the server serves (see GET /v1/models).")
    if backend == "embedded" and not data.get("model"):
        raise ConfigError("judge=embedded needs judge.model: smollm2-135m, tiny-llama or a local model directory.")
    if data.get("cache") is False:
        data["cache"] = None  # `judge.cache=false` reads as off
    return parse(JudgeSettings, data, defaults=defaults_from_yaml(f"judge/{backend}.yaml"))
