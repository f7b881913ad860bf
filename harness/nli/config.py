"""Options of an NLI scorer (`load_nli(cfg)`), checked once, with the pinned hub revisions.

A config is a mapping (dict, OmegaConf node or `NLIConfig`) with the fields below; `None`
means "the backend's default". An option that the chosen backend does not use is an error
unless it is left at its default, so a typo or a misplaced option never passes silently.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, fields
from difflib import get_close_matches
from typing import Any

from ..errors import ConfigError

BACKENDS = ("standin", "hhem", "deberta")
# Offline CPU machines cannot reach HHEM's or DeBERTa's weights, so the embedded default is
# the documented stand-in; FSPO / KnowRL configs name `hhem` / `deberta` for faithful runs.
DEFAULT_BACKEND = "standin"

# Pinned hub revisions (BASELINES 2.1, 5.1). HHEM's is after "support GPU inference" (inputs on
# the model's device); the pins were cross-checked in several public projects, not here offline.
HHEM_ID = "vectara/hallucination_evaluation_model"
HHEM_REVISION = "8e4a2e6e96c708cc76c2344f7e4757df2515292c"
HHEM_FOUNDATION_ID = "google/flan-t5-base"
HHEM_FOUNDATION_REVISION = "7bcac572ce56db69c1ea7c8af255c5d7c9672fc2"
DEBERTA_ID = "MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli"
DEBERTA_REVISION = "6f5cf0a2b59cabb106aca4c287eed12e357e90eb"
PINNED = {HHEM_ID: HHEM_REVISION, HHEM_FOUNDATION_ID: HHEM_FOUNDATION_REVISION, DEBERTA_ID: DEBERTA_REVISION}
DEFAULT_MODEL = {"hhem": HHEM_ID, "deberta": DEBERTA_ID, "standin": None}

DTYPES = ("float32", "bfloat16", "float16")
CODES = ("harness", "remote")
_HEX40 = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class NLIConfig:
    """One NLI scorer's settings; every field is recorded by `describe()`."""

    backend: str = DEFAULT_BACKEND
    # Hub id or local directory; None = DEFAULT_MODEL[backend]. Hub ids load from the local
    # Hugging Face cache first.
    model: str | None = None
    # Hub commit; None = the pin above for a default id. Other hub ids must give one.
    revision: str | None = None
    # Pairs per forward pass (pairs are sorted by length first, order is restored).
    batch_size: int = 16
    # "auto" = CUDA when available, else CPU; or "cpu", "cuda", "cuda:1".
    device: str = "auto"
    dtype: str = "float32"
    # hhem: where the flan-t5-base config and tokenizer live (the offline hook of BASELINES
    # 2.1); None = the checkpoint's `foundation` (google/flan-t5-base at its pin).
    foundation: str | None = None
    # hhem: "harness" = our HHEM-shaped class (transformers 5.x); "remote" = the checkpoint's
    # own code via trust_remote_code, allowed only for HHEM's hub id or a local directory.
    code: str = "harness"
    # hhem: premise tokens kept (HHEM itself never truncates; cost grows ~quadratically).
    max_premise_tokens: int = 2048
    # deberta: tokenizer(premise, hypothesis, truncation=True, max_length=...) as KnowRL.
    max_length: int = 512
    # deberta: the id2label name of the entailment class (matched case-insensitively).
    entailment_label: str = "entailment"

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
_DEFAULTS = NLIConfig()


def _as_dict(cfg: Any) -> dict[str, Any]:
    if cfg is None:
        return {}
    if isinstance(cfg, NLIConfig):
        return cfg.to_dict()
    try:  # OmegaConf nodes: resolve interpolations into plain values
        from omegaconf import DictConfig, OmegaConf

        if isinstance(cfg, DictConfig):
            return dict(OmegaConf.to_container(cfg, resolve=True))
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        pass
    if isinstance(cfg, dict):
        return dict(cfg)
    raise ConfigError(f"nli: expected a mapping of options, got {type(cfg).__name__}.")


def parse_config(cfg: Any) -> NLIConfig:
    """Check a mapping of NLI options and return an `NLIConfig` (ConfigError on any problem)."""
    raw = _as_dict(cfg)
    names = [f.name for f in fields(NLIConfig)]
    for key in raw:
        if key not in names:
            hint = get_close_matches(key, names, n=1)
            extra = f" Did you mean nli.{hint[0]}?" if hint else ""
            raise ConfigError(f"nli.{key} is not an NLI option.{extra} Valid: {', '.join(names)}.")
    values = {k: v for k, v in raw.items() if v is not None or k in ("model", "revision", "foundation")}
    backend = str(values.get("backend", DEFAULT_BACKEND))
    if backend not in BACKENDS:
        raise ConfigError(f"nli.backend={backend!r} is not valid; use one of {', '.join(BACKENDS)}.")
    for key, owner in _ONLY.items():
        if key in values and owner != backend and values[key] != getattr(_DEFAULTS, key):
            raise ConfigError(f"nli.{key} applies only to nli.backend={owner}; remove it for backend {backend}.")
    for key in ("batch_size", "max_premise_tokens", "max_length"):
        value = values.get(key, getattr(_DEFAULTS, key))
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"nli.{key}={value!r} must be a positive integer.")
    if values.get("dtype", "float32") not in DTYPES:
        raise ConfigError(f"nli.dtype={values['dtype']!r} is not valid; use one of {', '.join(DTYPES)}.")
    if values.get("code", "harness") not in CODES:
        raise ConfigError(f"nli.code={values['code']!r} is not valid; use harness or remote.")
    device = str(values.get("device", "auto"))
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", device):
        raise ConfigError(f"nli.device={device!r} is not valid; use auto, cpu, cuda or cuda:N.")
    out = NLIConfig(**{**values, "backend": backend, "device": device})
    if backend == "standin" and (out.model is not None or out.revision is not None):
        raise ConfigError("nli.model / nli.revision do not apply to backend standin (it has no weights); "
                          "remove them or choose nli.backend=hhem|deberta.")
    return out


def check_revision(cfg: NLIConfig, is_local: bool) -> str | None:
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
