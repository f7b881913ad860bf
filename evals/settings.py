"""`EvalSettings`: the `eval` config group (configs/eval/), with defaults and checks.

Checked before anything is loaded or generated, so a bad setting fails in a second with the
key and the fix, not after an hour of generation.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from factrl.harness.config import as_container
from factrl.harness.errors import ConfigError

from .backends import BACKENDS
from .judged_settings import check_judged
from .scorers import get_scorer, unused_options
from .sets import get_spec


@dataclass
class EvalSettings:
    """The `eval` config group, with defaults for keys a caller's config may lack (see configs/eval/)."""

    sets: list[str]
    backend: str = "hf"
    batch_size: int = 16
    processes: int = 1  # data-parallel generation: N processes, one GPU each (harness/eval_process.py)
    limit: int | None = None
    max_new_tokens: int | None = None
    scorer: str = "default"
    truthfulqa_no_comment: bool = False
    truthfulqa_content_guard: bool = True
    anti_loop: bool = False
    cache: bool = True
    data_dir: str | None = None
    data: dict = field(default_factory=dict)
    aliases: dict = field(default_factory=dict)
    revision: dict = field(default_factory=dict)
    vllm: dict = field(default_factory=dict)
    openai: dict = field(default_factory=dict)
    # The judged evaluations (evals/judged.py); their options are checked in judged_settings.py.
    factscore: bool = False
    semantic: bool = False
    simpleqa_grader: bool = False
    factscore_options: dict = field(default_factory=dict)
    semantic_options: dict = field(default_factory=dict)
    simpleqa_grader_options: dict = field(default_factory=dict)

    @classmethod
    def from_config(cls, node: Any) -> "EvalSettings":
        raw = as_container(node) or {}
        known = {k: v for k, v in raw.items() if k in cls.__dataclass_fields__ and v is not None}
        sets = known.get("sets")
        if isinstance(sets, str):
            known["sets"] = [sets]
        if not known.get("sets"):
            raise ConfigError("eval.sets is empty: name at least one set (e.g. eval=closed-book or eval.sets=[demo]).")
        settings = cls(**known)
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
            get_spec(name)  # unknown names fail with a suggestion
        if self.backend not in BACKENDS:
            raise ConfigError(f"eval.backend={self.backend!r}: use one of {', '.join(BACKENDS)}.")
        if self.limit is not None and int(self.limit) < 1:
            raise ConfigError(f"eval.limit={self.limit}: give a positive number of questions, or null for all.")
        if self.batch_size < 1:
            raise ConfigError(f"eval.batch_size={self.batch_size}: must be at least 1.")
        if int(self.processes) < 1:
            raise ConfigError(f"eval.processes={self.processes}: must be at least 1 (one process per GPU).")
        unused = unused_options(self.scorer, self.scorer_options)  # also refuses unknown scorer names
        if unused:
            key = unused[0]
            raise ConfigError(f"eval.{key}={self.scorer_options[key]}: scorer {self.scorer} does not use it; "
                              f"remove the override or use eval.scorer=default.")
        scorer = self.make_scorer()
        for name in self.sets:
            scorer.metrics(get_spec(name).task)  # e.g. corver-official refuses multi-hop sets here
        check_judged(self)
