"""The `judge` config group (configs/judge/{none,embedded,openai,reference}.yaml) read into checked settings.

Each bad value is a one-line ConfigError naming the field (`judge.<field>`) and what to set;
an absent field takes the value of the backend's own file (configs/judge/<backend>.yaml).
The API key itself is never part of the settings: only the *name* of its environment
variable (`api_key_env`); the key is read when the judge opens and handed to the SDK only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ...core.errors import ConfigError
from ...core.registry import names
from ...core.settings import Settings, defaults_from_yaml, in_range, parse, plain

REPLY_MODES = ("auto", "text", "json_schema")
NO_JUDGE = "judge/none.yaml"  # judge=none, the option a node without a backend stands for
EMBEDDED_ONLY = ("startup_timeout", "threads", "device", "dtype")  # options of the local server
# Keys only a served judge (embedded, openai) reads: the reference and none options accept and ignore them.
SERVED_ONLY = ("base_url", "api_key_env", "timeout", "max_retries", "backoff", "concurrency", "max_reasks",
               "temperature", "top_p", "max_tokens", "max_tokens_cap", "enable_thinking", "reply_mode", "cache",
               *EMBEDDED_ONLY)


@dataclass(frozen=True)
class JudgeSettings(Settings):
    """`judge.*` of judge=embedded or judge=openai. The defaults are that option's file,
    configs/judge/<backend>.yaml, so a judge built from a dict (`open_judge({"backend":
    "openai", ...})`) behaves as `judge=openai` does."""

    OWNER = "judge"
    RANGES = {"timeout": "(0, inf)", "max_retries": "[0, inf)", "backoff": "[0, inf)", "concurrency": "[1, inf)",
              "max_reasks": "[0, inf)", "temperature": "[0, 2]", "top_p": "(0, 1]", "max_tokens": "[1, inf)",
              "max_tokens_cap": "[1, inf)", "max_failed_share": "[0, 1]", "startup_timeout": "(0, inf)",
              "threads": "[1, inf)"}

    backend: str
    model: str | None  # served model id (openai) / embedded model name or directory (embedded)
    base_url: str | None
    api_key_env: str | None  # the *name* of the variable holding the key; None: a local server
    timeout: float
    max_retries: int
    backoff: float
    concurrency: int
    max_reasks: int
    temperature: float  # for prompts whose Decoding leaves it unset
    top_p: float | None  # idem; None: not sent (the server's default)
    max_tokens: int  # idem
    max_tokens_cap: int | None  # bounds every reply, a prompt's own max_tokens included (CPU stand-ins)
    enable_thinking: bool | None  # sent as chat_template_kwargs for prompts that pin none; None: not sent
    reply_mode: Literal["auto", "text", "json_schema"]  # structured replies (docs/CONTRACTS.md)
    cache: str | None  # auto | a path | None (off)
    max_failed_share: float
    stand_in: bool
    note: str | None
    paper_model: str | None  # the judge the method's paper used (set by configs/protocol/method/*.yaml)
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
        if self.top_p is not None and not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p={self.top_p:g} is out of range; set a value in (0, 1] or null "
                             f"(the server's default)")
        if self.max_tokens_cap is not None:
            in_range("max_tokens_cap", self.max_tokens_cap, 1)
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
    IGNORE = SERVED_ONLY

    backend: str
    model: str | None
    paper_model: str | None


@dataclass(frozen=True)
class ReferenceSettings(Settings):
    """judge=reference (configs/judge/reference.yaml): each prompt's reference answer, in-process.

    It has no server and no decoding, so the served judges' keys (`SERVED_ONLY`) are accepted and
    have no effect: a protocol file that tunes the served judge for a model (e.g. the reply cap of
    configs/protocol/method_model/rlfh_tiny-llama.yaml) applies whichever judge a run picks."""

    OWNER = "judge"
    DEFAULTS = "judge/reference.yaml"
    IGNORE = SERVED_ONLY
    RANGES = {"max_failed_share": "[0, 1]"}

    backend: str
    model: str
    max_failed_share: float
    stand_in: bool
    note: str | None
    paper_model: str | None
    obey_material: bool  # answer as a weak judge that follows grading advice inside the material (reference.py)

    def __post_init__(self) -> None:
        in_range("max_failed_share", self.max_failed_share, 0.0, 1.0)
        if not self.stand_in:
            raise ValueError("stand_in=false: the reference judge is always a stand-in (rule-based answers)")
        if not self.note:
            raise ValueError("note: missing; say what the reference judge stands in for")


def read_settings(judge_cfg: Any) -> JudgeSettings | NoJudgeSettings | ReferenceSettings:
    """The checked settings of a `judge` node or dict, over the defaults of its backend's file."""
    data = dict(plain(judge_cfg) or {})
    if data.get("backend") is None:  # a node without a backend stands for the no-judge option
        data["backend"] = defaults_from_yaml(NO_JUDGE)["backend"]
    backend = str(data["backend"])
    if backend not in names("judge"):  # the registry's `judge` kind
        raise ConfigError(f"judge.backend={backend!r} is not valid; use judge=reference (rule-based stand-in), "
                          f"judge=embedded (a local model) or judge=openai judge.base_url=URL judge.model=NAME.")
    if backend == "none":
        return NoJudgeSettings.from_mapping(data)
    if backend == "reference":
        return ReferenceSettings.from_mapping(data)
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
