"""The composed config as plain data: redaction, plain containers and the run hash.

A leaf: it knows nothing of Hydra's composition (harness/engine/config.py) or of methods, so every
layer (the judge's transport, the evaluator's provenance, the run directory, the methods)
can redact and hash a config without importing the composer, which reaches the method registry.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from omegaconf import DictConfig, OmegaConf


SECRET_KEY = re.compile(r"(?i)(api[_-]?key|secret|password|token)$")
REDACTED = "***REDACTED***"
# The user:password part of a URL (http://user:pass@host/...); it stops at the first "/", "?" or
# "#", so an "@" in a path or query is left alone.
URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s@]+@")
# Keys that do not change what a run computes, so they stay out of its hash.
VOLATILE_KEYS = ("output_dir", "resume", "force", "hydra", "leaderboard", "timer", "launcher", "eval_process",
                 "stage", "claim", "threads")
# Nested keys of the same kind: where a vLLM server listens and how long to wait for it.
VOLATILE_PATHS = (("train", "vllm", "server_base_url"), ("train", "vllm", "server_host"),
                  ("train", "vllm", "server_port"), ("train", "vllm", "server_timeout"))


def redact_url(text: str) -> str:
    """`text` with the credentials of every URL in it replaced: http://***REDACTED***@host/v1."""
    return URL_USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text) if "@" in text else text


def redact(value: Any) -> Any:
    """A plain container copy with every secret-looking key's value and URL credentials replaced."""
    if isinstance(value, str):
        return redact_url(value)
    if isinstance(value, DictConfig):
        value = OmegaConf.to_container(value, resolve=True)
    if isinstance(value, dict):
        return {k: (REDACTED if SECRET_KEY.search(str(k)) and v not in (None, "") else redact(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def as_container(node: Any) -> Any:
    """A config node (OmegaConf or plain) as plain, resolved Python containers; None stays None."""
    from omegaconf import ListConfig

    if isinstance(node, (DictConfig, ListConfig)):
        return OmegaConf.to_container(node, resolve=True)
    return node


def to_plain(cfg: DictConfig) -> dict:
    """Resolved, redacted plain dict of a config, without Hydra's own node."""
    data = redact(cfg)
    data.pop("hydra", None)
    return data


def config_hash(cfg: DictConfig | dict, length: int = 8) -> str:
    """Stable hash of what a run computes (volatile keys and secrets excluded)."""
    data = to_plain(cfg) if isinstance(cfg, DictConfig) else redact(dict(cfg))
    for key in VOLATILE_KEYS:
        data.pop(key, None)
    for *parents, key in VOLATILE_PATHS:
        node = data
        for parent in parents:
            node = node.get(parent) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(key, None)
    blob = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:length]
