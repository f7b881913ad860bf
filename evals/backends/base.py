"""The backend interface: requests in, generations out, nothing about evaluation.

A backend knows how to run one model (and optional adapter) with one decoding preset. It
receives a list of `Request`s and yields `(index, Generation)` pairs as each finishes, in any
order, so the caller can write every sample the moment it exists and an interrupted
evaluation resumes where it stopped. Backends that batch sort longest-first (padding and
out-of-memory show up in the first batch) and report results under the caller's indexes.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterator, Sequence

from factrl.harness.errors import HarnessError


@dataclass(frozen=True)
class Request:
    """One question to answer. The system prompt is the shared one (harness.prompts)."""

    question: str
    system: str


@dataclass(frozen=True)
class Generation:
    """A completion. finish_reason: "stop" (EOS or stop string), "length" (token limit) or None."""

    text: str
    finish_reason: str | None = None
    n_tokens: int | None = None


@dataclass(frozen=True)
class Decoding:
    """A decoding preset (configs/model/*.yaml `decoding`, with eval overrides applied)."""

    do_sample: bool = False
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    max_new_tokens: int = 1000
    seed: int | None = None

    @classmethod
    def from_config(cls, node: Any, *, max_new_tokens: int | None = None, seed: int | None = None) -> "Decoding":
        values = {k: node.get(k) for k in cls.__dataclass_fields__ if node is not None and node.get(k) is not None}
        if max_new_tokens is not None:
            values["max_new_tokens"] = int(max_new_tokens)
        decoding = cls(**values)
        # The seed only matters when sampling; leaving it out of greedy presets keeps greedy
        # cache keys and resume checks independent of it.
        decoding = cls(**{**values, "seed": seed if decoding.do_sample else None})
        if decoding.max_new_tokens < 1:
            raise HarnessError(f"max_new_tokens={decoding.max_new_tokens}: must be at least 1.")
        if decoding.do_sample and decoding.temperature <= 0:
            raise HarnessError("decoding.do_sample=true needs temperature > 0 (greedy: do_sample=false).")
        return decoding

    @property
    def greedy(self) -> bool:
        return not self.do_sample

    def to_dict(self) -> dict:
        return asdict(self)


class BackendError(HarnessError):
    """Some requests failed for good (after retries); finished ones were already yielded."""


class Backend:
    """Base class. Subclasses set `name` and implement `generate` (and `close` if they hold resources)."""

    name = ""


    def generate(self, requests: Sequence[Request]) -> Iterator[tuple[int, Generation]]:
        raise NotImplementedError

    def close(self) -> None:
        pass


def longest_first(lengths: Sequence[int]) -> list[int]:
    """Indexes ordered by decreasing length (stable), for batching."""
    return sorted(range(len(lengths)), key=lambda i: -lengths[i])


@dataclass(frozen=True)
class GenerationEntry:
    """What the registry's `generation` kind names (evals/backends/__init__.py).

    build(identity, model_cfg, decoding, options) -> Backend: `options` holds adapter, settings
    (the backend's `eval.<name>` node), batch_size, device, model, tokenizer, hf_fast; each
    backend takes what it uses.
    provenance(eval settings, cfg, model_cfg, processes) -> dict: what about the backend can change a
    completion (recorded, and part of the response cache key); `processes` is the data-parallel
    entry ({} for one process), added by backends whose batching it changes.
    """

    build: Any
    provenance: Any
