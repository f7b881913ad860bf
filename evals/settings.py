"""`EvalSettings`: the `eval` config group (configs/eval/), with defaults and checks.

Checked before anything is loaded or generated, so a bad setting fails in a second with the
key and the fix, not after an hour of generation.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from factrl.harness.core import registry
from factrl.harness.core.errors import ConfigError
from factrl.harness.core.settings import Settings, plain

from .backends.settings import OpenAIEvalSettings, VLLMEvalSettings
from .judged_settings import check_judged
from .scorers import get_scorer, unused_options


@dataclass
class EvalSettings(Settings):
    """The `eval` config group; configs/eval/base.yaml holds every default (a caller's dict
    gets them too) and documents each key."""

    OWNER = "eval"
    DEFAULTS = "eval/base.yaml"
    RANGES = {"batch_size": "[1, inf)", "processes": "[1, inf)", "limit": "[1, inf)", "max_new_tokens": "[1, inf)"}
    IGNORE = ("name",)

    sets: list[str]
    backend: str
    batch_size: int
    hf_fast: bool | str  # hf on the CPU: merged, oneDNN-prepacked weights (auto: on the CPU)
    hf_shared_prefix: bool  # hf: a batch's common prompt prefix prefilled once (services/models/common_prefix.py)
    processes: int  # data-parallel generation: N processes, one GPU each (harness/engine/run/eval_process.py)
    limit: int | None
    max_new_tokens: int | None
    scorer: str
    truthfulqa_no_comment: bool
    truthfulqa_content_guard: bool
    anti_loop: bool
    cache: bool
    data_dir: str | None
    data: dict[str, Any]
    aliases: dict[str, Any]
    revision: dict[str, Any]
    vllm: VLLMEvalSettings  # backend=vllm (evals/backends/settings.py)
    openai: OpenAIEvalSettings  # backend=openai
    # The judged evaluations (evals/judged.py); their options are checked in judged_settings.py.
    factscore: bool
    semantic: bool
    simpleqa_grader: bool
    factscore_options: dict[str, Any]
    semantic_options: dict[str, Any]
    simpleqa_grader_options: dict[str, Any]

    @classmethod
    def from_config(cls, node: Any) -> "EvalSettings":
        """Parsed and checked (`validate`): the settings a run evaluates with."""
        raw = dict(plain(node) or {})
        if isinstance(raw.get("sets"), str):
            raw["sets"] = [raw["sets"]]
        if not raw.get("sets"):
            raise ConfigError("eval.sets is empty: name at least one set (e.g. eval=closed-book or eval.sets=[demo]).")
        settings = cls.from_mapping(raw)
        settings.validate()
        return settings

    @property
    def scorer_options(self) -> dict[str, Any]:
        """The scorer options of this group (each `eval.<key>`), as `get_scorer` takes them."""
        return {"truthfulqa_no_comment": self.truthfulqa_no_comment,
                "truthfulqa_content_guard": self.truthfulqa_content_guard}

    def make_scorer(self):
        return get_scorer(self.scorer, **self.scorer_options)

    def validate(self) -> None:
        for name in self.sets:
            registry.require("eval_sets", name, "eval.sets")  # unknown names fail with a suggestion
            registry.eval_set(name)  # a plugin set that fails to load says so here
        registry.require("generation", self.backend, "eval.backend")
        if self.limit is not None and int(self.limit) < 1:
            raise ConfigError(f"eval.limit={self.limit}: give a positive number of questions, or null for all.")
        if self.batch_size < 1:
            raise ConfigError(f"eval.batch_size={self.batch_size}: must be at least 1.")
        if self.hf_fast not in ("auto", True, False):
            raise ConfigError(f"eval.hf_fast={self.hf_fast!r}: use auto, true or false.")
        if int(self.processes) < 1:
            raise ConfigError(f"eval.processes={self.processes}: must be at least 1 (one process per GPU).")
        unused = unused_options(self.scorer, self.scorer_options)  # also refuses unknown scorer names
        if unused:
            key = unused[0]
            raise ConfigError(f"eval.{key}={self.scorer_options[key]}: scorer {self.scorer} does not use it; "
                              f"remove the override or use eval.scorer=default.")
        scorer = self.make_scorer()
        for name in self.sets:
            scorer.metrics(registry.eval_set(name).task)  # e.g. corver-official refuses multi-hop sets here
        check_judged(self)
