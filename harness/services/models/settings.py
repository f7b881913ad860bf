"""`ModelSettings`: the `model` node (configs/model/<name>.yaml) as a checked settings object.

A composed `model=<name>` node holds every key of its file. A key a node leaves out (a node built
by hand, `{"id": "org/name"}` or `{"name": ..., "source": "embedded"}`) takes the value of
configs/model/custom.yaml, the option of any hub id or local directory. `name` is the one
exception: custom.yaml's name labels that option, so a hand-built node without one has none (the
loader names it by its id). The keys of random weights (`tokenizer_from`, `architecture`, `shrink`)
are None on a node without them.

`model.decoding` is parsed by its own class (factrl.evals.backends.settings.decoding_of);
`architecture` and `shrink` by the random-model builder (shapes.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.settings import Settings, plain

SOURCES = ("hub", "embedded", "random")  # `path` set: a local directory, whatever the source


@dataclass(frozen=True)
class ModelSettings(Settings):
    """The `model` node; configs/model/custom.yaml documents each key and holds the defaults."""

    OWNER = "model"
    DEFAULTS = "model/custom.yaml"
    RANGES = {"seed": "[0, 4294967295]"}

    name: str | None  # None: a hand-built node without one (module docstring)
    source: str  # hub | embedded | random
    revision: str | None
    path: str | None  # a local directory; overrides id and source
    dtype: str
    seed: int  # source=random: the weight seed
    system_role: bool
    enable_thinking: bool | None
    demonstration: bool
    format_warmup: bool  # a method's format warm-up runs on this model (Method.format_warmup)
    response_prefix: str | None
    chat_template: str | None
    decoding: dict[str, Any]
    id: str | None = None  # a hub id (custom.yaml's `???`: to be set; a node with a path needs none)
    tokenizer_from: str | None = None  # source=random: the local model whose tokenizer is used
    architecture: dict[str, Any] | None = None  # the real model's shape (source=random)
    shrink: dict[str, Any] | None = None  # `+model.shrink`: overrides of `architecture` (a CPU-sized model)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source={self.source!r} is not valid; use {', '.join(SOURCES)}, or set model.path")

    @classmethod
    def default_values(cls) -> dict[str, Any]:
        values = super().default_values()
        values["name"] = None  # custom.yaml's label, not a default name (module docstring)
        return values

    @classmethod
    def of(cls, node: Any) -> "ModelSettings":
        """`node` parsed (a ModelSettings passes through); a key it leaves out takes custom.yaml's value."""
        return node if isinstance(node, ModelSettings) else cls.from_mapping(plain(node))


__all__ = ["ModelSettings", "SOURCES"]
