"""Scoring one set's predictions and writing its results (samples.jsonl, metrics.json)."""
from __future__ import annotations

import logging
from pathlib import Path

from factrl.harness.core import registry
from factrl.harness.core.rundir import write_json

from .calibration import calibration_line, calibration_summary
from .metrics import aggregate, metrics_file
from .predictions import align, write_jsonl
from .sets import EvalSet
from .strict import strict_line, strict_summary

log = logging.getLogger("factrl.evals")


def score_set(eval_set: EvalSet, rows: dict[str, dict], scorer, generation: dict, folder: Path, where: str,
              judged=None) -> dict:
    """Score aligned predictions, write samples.jsonl and metrics.json into `folder`; returns the metrics doc.

    judged: an open `judged.JudgedEvals` (or None); its metrics join the set's `metrics` map and
    its sections go under the document's `judged` key."""
    completions = align(eval_set, rows, where)
    samples = scorer.score(eval_set, completions)
    metrics = aggregate(samples, scorer.metrics(eval_set.task))
    sections: dict = {}
    if judged is not None:
        extra, sections = judged.run(eval_set, completions, folder)
        metrics.update(extra)
    doc = metrics_file(set_info=eval_set.describe(), scorer=scorer.describe(), generation=generation, metrics=metrics)
    rule = registry.get("tasks", eval_set.task).rule
    if rule:  # a plugin task's own rule scored it (evals/scorers/default.py): say which, and its version
        doc["set"]["task_rule"] = {"target": rule, "version": str(getattr(registry.resolve(rule), "version", ""))}
    if sections:
        doc["judged"] = sections
    strict = strict_summary(samples.rows(), eval_set.task)  # beside the scorer's numbers (evals/strict.py)
    if strict is not None:
        doc["strict_accuracy"] = strict
    calibration = calibration_summary(samples.rows())  # stated confidences, any method (evals/calibration.py)
    if calibration is not None:
        doc["calibration"] = calibration
    write_jsonl(folder / "samples.jsonl", samples.rows())
    write_json(folder / "metrics.json", doc)
    headline = ", ".join(f"{k} {v['value']:.4f}" for k, v in list(metrics.items())[:3])
    log.info("%s (%d questions, scorer %s %s): %s%s%s", eval_set.name, eval_set.count, scorer.name, scorer.version,
             headline, f"; {strict_line(strict)}" if strict else "",
             f"; {calibration_line(calibration)}" if calibration else "")
    return doc
