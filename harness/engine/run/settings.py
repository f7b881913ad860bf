"""The root keys of `harness run` (configs/config.yaml), its `claim` node and the `launcher` group as
checked settings (harness/core/settings.py), and `check_run_settings`: every group of a composed config
parsed before the run directory exists or anything loads, so a bad value of any group is one line.

`RootSettings` reads only the root's own keys (the groups are the other classes' nodes); an added
root key (`+sed=1`) is refused with the closest real one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.settings import Settings, option_defaults, plain

STAGES = ("all", "train", "eval")
EVAL_PROCESS = ("auto", "fresh", "same")
LAUNCHERS = ("none", "accelerate", "torchrun")
ACCELERATE_CONFIGS = ("ddp", "zero2", "zero3")  # configs/accelerate/<name>.yaml
_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
# The root's groups and Hydra's own node: nodes the other settings classes (or Hydra) read.
GROUP_KEYS = ("method", "judge", "model", "pool", "eval", "train", "lora", "corpus", "evidence", "timer",
              "leaderboard", "launcher", "experiment", "protocol", "claim", "hydra")


@dataclass(frozen=True)
class RootSettings(Settings):
    """The root keys of configs/config.yaml (each documented there)."""

    OWNER = ""
    DEFAULTS = "config.yaml"
    IGNORE = GROUP_KEYS
    RANGES = {"seed": "[0, 4294967295]", "threads": "[1, inf)"}  # threads: or auto

    seed: int
    output_dir: str
    adapter: str | None  # `harness eval adapter=DIR`
    resume: bool
    force: bool
    device: str  # auto | cpu | cuda[:N]
    threads: int | str  # auto | N (harness/engine/run/threads.py)
    eval_process: str  # auto | fresh | same (harness/engine/run/eval_process.py)
    stage: str  # all | train | eval

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"stage={self.stage!r}: use all (train, then evaluate), train (train only) or eval "
                             f"(evaluate a trained run)")
        if self.eval_process not in EVAL_PROCESS:
            raise ValueError(f"eval_process={self.eval_process!r}: use auto (a fresh process on GPUs, several "
                             f"processes, DeepSpeed or vLLM), fresh (always) or same (in the training process)")
        if not _DEVICE.match(self.device):
            raise ValueError(f"device={self.device!r}: use auto, cpu or cuda (cuda:N for one GPU)")
        if self.threads != "auto" and (not isinstance(self.threads, int) or self.threads < 1):
            raise ValueError(f"threads={self.threads!r}: give auto or a positive number of threads")


@dataclass(frozen=True)
class ClaimSettings(Settings):
    """`claim.*` (configs/config.yaml): the claim files of harness/engine/run/claims.py."""

    OWNER = "claim"
    DEFAULTS = "config.yaml:claim"
    RANGES = {"heartbeat_s": "(0, inf)", "stale_s": "(0, inf)", "pending_stale_s": "(0, inf)"}

    heartbeat_s: float  # the holder refreshes its claim this often
    stale_s: float  # a claim not refreshed for this long belongs to a dead holder
    pending_stale_s: float  # harness grid's claim of a submitted job that has not started


@dataclass(frozen=True)
class LauncherSettings(Settings):
    """`launcher.*` (configs/launcher/<name>.yaml; an absent key takes the value of that option's
    file, so a dict behaves as `launcher=<name>` does). Keys of one launcher only are None on the
    others."""

    OWNER = "launcher"
    DEFAULTS = "launcher/none.yaml"  # the root default; from_mapping picks the option's own file
    RANGES = {"timeout_min": "(0, inf)", "num_processes": "[1, inf)", "main_process_port": "[1, 65535]"}

    name: str
    timeout_min: float  # process-group timeout of a launched run's collectives
    num_processes: int | None = None  # accelerate, torchrun
    extra_args: list[str] | None = None  # accelerate, torchrun
    config: str | None = None  # accelerate: ddp | zero2 | zero3
    main_process_port: int | None = None  # accelerate

    def __post_init__(self) -> None:
        if self.name not in LAUNCHERS:
            raise ValueError(f"name={self.name!r}: use launcher=none, launcher=accelerate or launcher=torchrun")
        if self.name == "accelerate" and self.config not in ACCELERATE_CONFIGS:
            raise ValueError(f"config={self.config!r}: use one of {', '.join(ACCELERATE_CONFIGS)} "
                             f"(configs/accelerate/)")
        if self.name != "none" and self.num_processes is None:
            raise ValueError(f"num_processes: missing; launcher={self.name} needs it")

    @classmethod
    def from_mapping(cls, mapping: Any = None, *, owner: str | None = None, **changes: Any) -> "LauncherSettings":
        from ...core.settings import parse

        data = {**dict(plain(mapping) or {}), **changes}
        name = str(data.get("name") or cls.default_values()["name"])  # the root default's
        if name not in LAUNCHERS:
            from ...core.errors import SettingError, did_you_mean

            raise SettingError(f"launcher={name!r} is not a launcher.{did_you_mean(name, LAUNCHERS)} Valid: "
                               f"{', '.join(LAUNCHERS)}")
        return parse(cls, data, owner=owner, defaults=option_defaults("launcher", name))


def check_run_settings(cfg: Any) -> dict[str, Any]:
    """Every group of the composed config `cfg` parsed by its settings class (harness/core/settings.py),
    before a model is loaded or a run directory made: one line naming the key and the fix on any
    bad value (`claim.stale_s=soon`, `lora.r=two`, `corpus.min_interval_s=-1`, `model.seed=x`). Returns the parsed
    objects by group (`root` for the root keys)."""
    from factrl.evals.backends.settings import decoding_of
    from factrl.evals.settings import EvalSettings
    from factrl.leaderboard.settings import LeaderboardSettings

    from ...services.corpus.settings import CorpusSettings
    from ...services.evidence.settings import EvidenceSettings
    from ...services.judge.settings import JudgeSettings
    from ...services.models.settings import ModelSettings
    from ...pool.settings import PoolSettings
    from ...core.settings import check_ranges
    from ...core.timer import TimerSettings
    from ...training.settings import LoRASettings, TrainSettings

    parsed: dict[str, Any] = {"root": root_settings(cfg)}
    parsed["train"] = TrainSettings.from_mapping(cfg.train)
    for group, cls in (("lora", LoRASettings), ("claim", ClaimSettings), ("launcher", LauncherSettings),
                       ("timer", TimerSettings), ("leaderboard", LeaderboardSettings), ("pool", PoolSettings),
                       ("corpus", CorpusSettings), ("evidence", EvidenceSettings)):
        if group == "corpus" and _plugin_corpus(cfg.get(group)):
            continue  # a plugin's corpus backend reads its own node when a method opens it
        parsed[group] = cls.from_mapping(cfg.get(group))  # a group left out: its YAML's values
    store = getattr(parsed.get("evidence"), "store", None)
    if store is not None and not Path(store).is_file():  # before the model loads, not when the reward opens it
        from ...core.errors import ConfigError
        from ...services.evidence.schema import BUILD_HINT

        raise ConfigError(f"evidence.store: evidence store {store} does not exist; build it with {BUILD_HINT}.")
    parsed["eval"] = EvalSettings.from_config(cfg.eval)
    if cfg.get("model") is not None:
        parsed["model"] = ModelSettings.from_mapping(cfg.model)
        parsed["decoding"] = decoding_of(cfg.model, max_new_tokens=parsed["eval"].max_new_tokens,
                                         seed=parsed["root"].seed)
    from ...core.errors import ConfigError
    from ...core.registry import require

    if cfg.get("judge") is not None:  # its backend's name and its numbers now; the rest when a method opens it
        backend = (plain(cfg.judge) or {}).get("backend")
        if backend is not None:
            require("judge", str(backend), "judge.backend")
        check_ranges(JudgeSettings, cfg.judge)
    method_nli = (plain(cfg.get("method")) or {}).get("nli") if cfg.get("method") is not None else None
    if isinstance(method_nli, dict):  # a method's NLI scorer (FSPO, KnowRL): checked before its weights load
        from ...services.nli.config import parse_config

        try:
            parse_config(method_nli)
        except (ValueError, TypeError) as err:
            raise ConfigError(f"method.{err}" if str(err).startswith("nli") else f"method.nli: {err}") from None
    return parsed


def _plugin_corpus(node: Any) -> bool:
    from ...services.corpus.settings import SHIPPED
    from ...core.registry import require

    backend = (plain(node) or {}).get("backend")
    return backend is not None and require("corpus", str(backend), "corpus.backend") not in SHIPPED


def root_settings(cfg: Any) -> RootSettings:
    """The root keys of a composed config (or a mapping of them), parsed."""
    return RootSettings.from_mapping(_root_node(cfg))


def _root_node(cfg: Any) -> dict[str, Any]:
    """The root's own keys (its groups left out), resolved."""
    from omegaconf import DictConfig, OmegaConf

    if isinstance(cfg, DictConfig):
        return {k: plain(cfg[k]) if not OmegaConf.is_missing(cfg, k) else "???" for k in cfg.keys()
                if k not in GROUP_KEYS}
    return {k: v for k, v in dict(cfg or {}).items() if k not in GROUP_KEYS}


__all__ = ["ClaimSettings", "LauncherSettings", "RootSettings", "check_run_settings", "root_settings"]
