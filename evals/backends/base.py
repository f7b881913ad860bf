"""The backend interface: requests in, generations out, nothing about evaluation.

A backend knows how to run one model (and optional adapter) with one decoding preset. It
receives a list of `Request`s and yields `(index, Generation)` pairs as each finishes, in any
order, so the caller can write every sample the moment it exists and an interrupted
evaluation resumes where it stopped. Backends that batch sort longest-first (padding and
out-of-memory show up in the first batch) and report results under the caller's indexes.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterator, Sequence

from factrl.harness.core.errors import HarnessError
from factrl.harness.core.settings import GIVEN, Settings, plain


@dataclass(frozen=True)
class Request:
    """One question to answer. The system prompt is the shared one (harness.core.prompts)."""

    question: str
    system: str


@dataclass(frozen=True)
class Generation:
    """A completion. finish_reason: "stop" (EOS or stop string), "length" (token limit) or None."""

    text: str
    finish_reason: str | None = None
    n_tokens: int | None = None


@dataclass(frozen=True)
class Decoding(Settings):
    """A decoding preset (configs/model/*.yaml `decoding`, with eval overrides applied). A key a
    preset leaves out takes the generic preset's value (configs/model/custom.yaml: greedy, 1,000
    new tokens): `Decoding.from_mapping(max_new_tokens=4)`."""

    OWNER = "model.decoding"
    DEFAULTS = "model/custom.yaml:decoding"
    RANGES = {"temperature": "[0, inf)", "top_p": "(0, 1]", "top_k": "[0, inf)", "repetition_penalty": "(0, inf)",
              "presence_penalty": "any", "max_new_tokens": "[1, inf)", "seed": "[0, 4294967295]"}
    # presence_penalty: the hf backend applies any value; vLLM and OpenAI servers refuse theirs outside [-2, 2]

    do_sample: bool
    temperature: float
    top_p: float
    top_k: int
    repetition_penalty: float
    presence_penalty: float
    max_new_tokens: int
    seed: int | None = field(default=None, metadata=GIVEN)  # the run's seed, kept only when sampling

    def __post_init__(self) -> None:
        if self.do_sample and self.temperature <= 0:
            raise ValueError("do_sample=true needs temperature > 0 (greedy: do_sample=false).")

    @classmethod
    def from_config(cls, node: Any, *, max_new_tokens: int | None = None, seed: int | None = None) -> "Decoding":
        """The preset `node` (None: the generic one) with `eval.max_new_tokens` (None: the preset's)
        and the run's seed."""
        values = {k: v for k, v in dict(plain(node) or {}).items() if v is not None}
        if max_new_tokens is not None:
            values["max_new_tokens"] = max_new_tokens
        values.pop("seed", None)
        decoding = cls.from_mapping(values)
        # The seed only matters when sampling; leaving it out of greedy presets keeps greedy
        # cache keys and resume checks independent of it.
        return cls.from_mapping(values, seed=seed) if decoding.do_sample and seed is not None else decoding

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
    (the backend's `eval.<name>` node), batch_size, device, model, tokenizer, hf_fast,
    hf_shared_prefix; each
    backend takes what it uses.
    provenance(eval settings, cfg, model_cfg, processes) -> dict: what about the backend can change a
    completion (recorded, and part of the response cache key); `processes` is the data-parallel
    entry ({} for one process), added by backends whose batching it changes.
    """

    build: Any
    provenance: Any
