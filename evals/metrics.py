"""Metric declarations, aggregation, and the metrics-file schema (docs/CONTRACTS.md).

Every metric is the mean of one per-sample field and declares whether higher is better; its
reported value carries the sample count and the standard error of the mean (sample standard
deviation / sqrt(n), as lm-evaluation-harness reports it). `validate_metrics_file` is the
schema of `eval/<set>/metrics.json`, checked before every write.
"""
from __future__ import annotations

import datetime as dt
import math
import operator
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from factrl.harness.core.registry import macro_sets

SCHEMA = "factrl.eval.metrics/1"
RUN_SCHEMA = "factrl.run.metrics/1"


@dataclass(frozen=True)
class Metric:
    """A reported number: the mean of per-sample `field` (bools count as 0/1)."""

    name: str
    field: str
    higher_is_better: bool
    description: str


# Diagnostics shared by every task: how often the model abstained, produced nothing usable,
# followed the answer format, and how long its answers were.
DIAGNOSTICS = (
    Metric("na_rate", "na", False, "not attempted: explicit refusal or empty answer"),
    Metric("refusal_rate", "refusal", False, "normalised answer is exactly an abstention form"),
    Metric("empty_rate", "empty", False, "answer normalises to nothing (no block, only punctuation/articles)"),
    Metric("format_rate", "format_ok", True, "exactly one closed, non-empty answer block"),
    Metric("mean_answer_words", "answer_words", False, "whitespace words in the extracted answer"),
    Metric("mean_completion_words", "completion_words", False, "whitespace words in the whole completion"),
)


def mean_stderr(values: Sequence[float]) -> tuple[float, float | None]:
    """(mean, standard error of the mean); stderr is None below two samples.

    Sums run in C (`sum`, `map`): this aggregates 40k samples per metric in the benchmark.
    """
    n = len(values)
    if n == 0:
        return 0.0, None
    total = sum(values)
    mean = total / n
    if n < 2:
        return float(mean), None
    var = max(0.0, (sum(map(operator.mul, values, values)) - total * mean) / (n - 1))
    return float(mean), math.sqrt(var / n)


class SampleTable:
    """Per-sample results of one set, stored as tuples under one tuple of field names.

    Scorers append one tuple per sample (cheaper than a dict on the 40k-sample hot path);
    `column` feeds aggregation, `rows` gives the dicts written to samples.jsonl.
    """

    __slots__ = ("fields", "data", "_index")

    def __init__(self, fields: Sequence[str], data: list[tuple] | None = None):
        self.fields = tuple(fields)
        self.data = data if data is not None else []
        self._index = {name: i for i, name in enumerate(self.fields)}

    def __len__(self) -> int:
        return len(self.data)

    def column(self, name: str) -> list:
        return list(map(operator.itemgetter(self._index[name]), self.data))

    def row(self, i: int) -> dict:
        return dict(zip(self.fields, self.data[i]))

    def rows(self) -> Iterable[dict]:
        fields = self.fields
        return (dict(zip(fields, values)) for values in self.data)


def aggregate(samples: SampleTable, metrics: Iterable[Metric]) -> dict[str, dict]:
    """{"<metric>": {"value", "n", "stderr", "higher_is_better"}} over a set's samples."""
    out = {}
    for metric in metrics:
        values = samples.column(metric.field)
        value, stderr = mean_stderr(values)
        out[metric.name] = {"value": value, "n": len(values), "stderr": stderr,
                            "higher_is_better": metric.higher_is_better}
    return out


def metrics_file(*, set_info: dict, scorer: dict, generation: dict, metrics: dict) -> dict:
    """The eval/<set>/metrics.json document, validated."""
    doc = {"schema": SCHEMA, "set": set_info, "scorer": scorer, "generation": generation, "metrics": metrics,
           "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    validate_metrics_file(doc)
    return doc


def _require(doc: Any, path: str, kinds: tuple, problems: list[str]) -> Any:
    node = doc
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            problems.append(f"missing {path}")
            return None
        node = node[part]
    if not isinstance(node, kinds):
        problems.append(f"{path} must be {' or '.join(k.__name__ for k in kinds)}, got {type(node).__name__}")
    return node


def validate_metrics_file(doc: Any) -> None:
    """Raise ValueError listing every way `doc` departs from the metrics-file schema."""
    problems: list[str] = []
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ValueError(f"not a {SCHEMA} document")
    for key, kinds in (("set.name", (str,)), ("set.task", (str,)), ("set.source", (str,)),
                       ("set.revision", (str, type(None))), ("set.sha256", (str,)), ("set.count", (int,)),
                       ("set.version", (str,)), ("scorer.name", (str,)), ("scorer.version", (str,)),
                       ("generation", (dict,)), ("metrics", (dict,)), ("created", (str,))):
        _require(doc, key, kinds, problems)
    for key in ("backend", "model", "adapter", "prompt_version", "prompt_hash", "decoding", "limit"):
        if isinstance(doc.get("generation"), dict) and key not in doc["generation"]:
            problems.append(f"missing generation.{key}")
    for name, entry in (doc.get("metrics") or {}).items():
        if not isinstance(entry, dict):
            problems.append(f"metrics.{name} must be an object")
            continue
        value = entry.get("value")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            problems.append(f"metrics.{name}.value must be a finite number")
        if not isinstance(entry.get("n"), int) or isinstance(entry.get("n"), bool):
            problems.append(f"metrics.{name}.n must be an integer")
        if not (entry.get("stderr") is None or isinstance(entry.get("stderr"), (int, float))):
            problems.append(f"metrics.{name}.stderr must be a number or null")
        if not isinstance(entry.get("higher_is_better"), bool):
            problems.append(f"metrics.{name}.higher_is_better must be a boolean")
    if problems:
        raise ValueError("invalid metrics file: " + "; ".join(problems))


def run_metrics(sets: dict[str, dict]) -> dict:
    """Run-level summary: every set's metrics file plus the closed-book macro.

    The macro is the mean `accuracy` of the registry's macro sets present (docs/PROTOCOL.md §6: TriviaQA,
    NQ-Open, PopQA, SimpleQA, TruthfulQA); `complete` says whether all of them were scored, since
    only complete macros compare with the paper's. Empty when none of them was scored.
    """
    members = macro_sets()
    present = [name for name in members if name in sets and "accuracy" in sets[name]["metrics"]]
    macro = {}
    if present:
        values = [sets[name]["metrics"]["accuracy"]["value"] for name in present]
        macro["closed_book_accuracy"] = {"value": math.fsum(values) / len(values), "n_sets": len(present),
                                         "sets": present, "complete": len(present) == len(members)}
    return {"schema": RUN_SCHEMA, "sets": sets, "macro": macro}
