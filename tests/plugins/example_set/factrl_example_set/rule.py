"""The `yes_no` task's rule: the first word of the extracted answer, yes or no, against the reference.

The default scorer calls `metrics(options)` and `score(eval_set, completions, options)` for a task
it has no rule of its own for (factrl.evals.scorers.default). Every sample row starts with the
common fields (id, question, completion, answer, references), then the fields the metrics average.
"""
from __future__ import annotations

from typing import Any, Sequence

from factrl.evals.metrics import Metric, SampleTable
from factrl.evals.scorers.base import COMMON_FIELDS
from factrl.harness.core.answers import extract_answer, normalize_answer

FIELDS = COMMON_FIELDS + ("correct", "na")
METRICS = (
    Metric("accuracy", "correct", True, "the answer's first word is the reference (yes or no)"),
    Metric("na_rate", "na", False, "the answer starts with neither yes nor no"),
)


class YesNoRule:
    version = "1"

    def metrics(self, options: dict[str, Any]) -> Sequence[Metric]:
        return METRICS

    def score(self, eval_set: Any, completions: Sequence[str], options: dict[str, Any]) -> SampleTable:
        table = SampleTable(FIELDS)
        for record, completion in zip(eval_set.records, completions):
            answer = extract_answer(completion, think=False).answer
            words = normalize_answer(answer).split()
            first = words[0] if words and words[0] in ("yes", "no") else None
            table.data.append((record.id, record.question, completion, answer, record.references,
                               first == record.references[0], first is None))
        return table


RULE = YesNoRule()
