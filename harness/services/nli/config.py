"""Options of an NLI scorer (`load_nli(cfg)`), checked once, with the pinned hub revisions.

A config is a mapping (dict, OmegaConf node or `NLISettings`) with the fields below; `None`
means "the backend's default". An option that the chosen backend does not use is an error
unless it is left at its default, so a typo or a misplaced option never passes silently.
The NLI scorer is no config group of `harness run` (a method's YAML names its scorer under
`method.nli`); its defaults live in configs/nli/default.yaml, which documents each option.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from ...core.errors import ConfigError, did_you_mean
from ...core.registry import names
from ...core.settings import Settings, defaults_from_yaml, plain

NLI_DEFAULTS = "nli/default.yaml"
# Offline CPU machines cannot reach HHEM's or DeBERTa's weights, so the embedded default is
# the documented stand-in; FSPO / KnowRL configs name `hhem` / `deberta` for faithful runs.
DEFAULT_BACKEND = defaults_from_yaml(NLI_DEFAULTS)["backend"]

# Pinned hub revisions (docs/BASELINES.md §2.1, 5.1). HHEM's is after "support GPU inference" (inputs on
# the model's device); the pins were cross-checked in several public projects, not here offline.
HHEM_ID = "vectara/hallucination_evaluation_model"
HHEM_REVISION = "8e4a2e6e96c708cc76c2344f7e4757df2515292c"
HHEM_FOUNDATION_ID = "google/flan-t5-base"
HHEM_FOUNDATION_REVISION = "7bcac572ce56db69c1ea7c8af255c5d7c9672fc2"
DEBERTA_ID = "MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli"
DEBERTA_REVISION = "6f5cf0a2b59cabb106aca4c287eed12e357e90eb"
PINNED = {HHEM_ID: HHEM_REVISION, HHEM_FOUNDATION_ID: HHEM_FOUNDATION_REVISION, DEBERTA_ID: DEBERTA_REVISION}
DEFAULT_MODEL = {"hhem": HHEM_ID, "deberta": DEBERTA_ID, "standin": None}

DTYPES = ("float32", "bfloat16", "float16", "auto")
AUTOCASTS = ("none", "bfloat16")
CODES = ("harness", "remote")
_HEX40 = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class NLISettings(Settings):
    """One NLI scorer's settings; every field is recorded by `describe()`."""

    OWNER = "nli"
    DEFAULTS = NLI_DEFAULTS  # configs/nli/default.yaml documents each option
    RANGES = {"batch_size": "[1, inf)", "max_premise_tokens": "[1, inf)", "max_length": "[1, inf)"}

    backend: str
    model: str | None  # None = DEFAULT_MODEL[backend]; hub ids load from the local Hugging Face cache first
    revision: str | None  # None = the pin above for a default id
    batch_size: int
    device: str
    dtype: str
    # "bfloat16": every forward on CUDA runs under torch.autocast("cuda", bfloat16), as FSPO's
    # release runs HHEM (nusnlp/FSPO@7f5e4f9 verl/workers/fsdp_workers.py:1028); on CPU it does
    # nothing (float32 compute) and describe() says so. "none": no autocast anywhere.
    autocast: str
    foundation: str | None  # hhem (the offline hook of BASELINES 2.1)
    # hhem: "remote" = the checkpoint's own code via trust_remote_code, allowed only for HHEM's hub
    # id or a local directory.
    code: str
    max_premise_tokens: int  # hhem (cost grows ~quadratically)
    max_length: int  # deberta: tokenizer(premise, hypothesis, truncation=True, max_length=...) as KnowRL
    entailment_label: str  # deberta

    def __post_init__(self) -> None:
        if self.backend not in names("nli"):  # the registry's `nli` kind (standin, hhem, deberta, plugins')
            raise ValueError(f"backend={self.backend!r} is not valid.{did_you_mean(str(self.backend), names('nli'))} "
                             f"Use one of {', '.join(names('nli'))}.")
        defaults = self.default_values()
        for key, owner in _ONLY.items():
            if owner != self.backend and getattr(self, key) != defaults[key]:
                raise ValueError(f"{key} applies only to nli.backend={owner}; remove it for backend {self.backend}.")
        for key in ("batch_size", "max_premise_tokens", "max_length"):
            if getattr(self, key) < 1:
                raise ValueError(f"{key}={getattr(self, key)!r} must be a positive integer.")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype={self.dtype!r} is not valid; use one of {', '.join(DTYPES)}.")
        if self.autocast not in AUTOCASTS:
            raise ValueError(f"autocast={self.autocast!r} is not valid; use one of {', '.join(AUTOCASTS)}.")
        if self.code not in CODES:
            raise ValueError(f"code={self.code!r} is not valid; use harness or remote.")
        if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", self.device):
            raise ValueError(f"device={self.device!r} is not valid; use auto, cpu, cuda or cuda:N.")
        if self.backend == "standin" and (self.model is not None or self.revision is not None):
            raise ValueError("model / nli.revision do not apply to backend standin (it has no weights); "
                             "remove them or choose nli.backend=hhem|deberta.")

    @property
    def model_id(self) -> str | None:
        return self.model if self.model is not None else DEFAULT_MODEL[self.backend]

    @property
    def pinned_revision(self) -> str | None:
        return self.revision if self.revision is not None else PINNED.get(self.model_id or "")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_ONLY = {"foundation": "hhem", "code": "hhem", "max_premise_tokens": "hhem", "max_length": "deberta",
         "entailment_label": "deberta"}
_NULLABLE = ("model", "revision", "foundation")  # None is a value; elsewhere it means "the default"


def parse_config(cfg: Any) -> NLISettings:
    """Check a mapping of NLI options and return `NLISettings` (a one-line ConfigError on any problem)."""
    raw = plain(cfg)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"nli: expected a mapping of options, got {type(cfg).__name__}.")
    return NLISettings.from_mapping({k: v for k, v in raw.items() if v is not None or k in _NULLABLE})


def check_revision(cfg: NLISettings, is_local: bool) -> str | None:
    """The revision to load: local directories have none; a hub id needs a pinned commit."""
    if is_local:
        if cfg.revision is not None:
            raise ConfigError(f"nli.revision={cfg.revision} is set but nli.model={cfg.model_id} is a local "
                              f"directory (it has no revisions); remove nli.revision.")
        return None
    revision = cfg.pinned_revision
    if revision is None or not _HEX40.fullmatch(revision):
        raise ConfigError(f"nli.model={cfg.model_id} needs nli.revision set to a 40-hex commit id "
                          f"(got {revision!r}); a branch name can change the scores silently.")
    return revision
