"""The scorer interface and the per-sample fields every scorer writes first.

A scorer is a named, versioned unit with one rule per task. It produces a SampleTable (rows
of id, question, completion, answer, references, then the fields its metrics average),
written as samples.jsonl, so any number can be recomputed.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..metrics import Metric, SampleTable
from ..sets import EvalSet

COMMON_FIELDS = ("id", "question", "completion", "answer", "references")


class Scorer:
    """Base: `metrics(task)` declares the numbers, `score(eval_set, completions)` makes samples.

    OPTIONS: the options this scorer takes, with their defaults; `get_scorer` refuses any other
    option a caller sets to a value that would change a score, so none is silently dropped.
    completions: one string per record of `eval_set`, in record order.
    Returns a SampleTable with one row per record, in the same order; its fields start with
    id, question, completion, answer, references, and include every metric's field.
    """

    name: str = ""
    version: str = ""
    OPTIONS: dict[str, Any] = {}

    def __init__(self, **options):
        self.options = {**self.OPTIONS, **options}

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version, "options": dict(self.options)}

    def metrics(self, task: str) -> Sequence[Metric]:
        raise NotImplementedError

    def score(self, eval_set: EvalSet, completions: Sequence[str]) -> SampleTable:
        raise NotImplementedError
