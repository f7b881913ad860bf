"""SimpleQA's grade arithmetic (simple-evals `simpleqa_eval.py`, docs/BASELINES.md §1.2).

Over the graded answers (failures excluded): correct, incorrect and not-attempted rates;
accuracy given attempted AGA = correct / (correct + incorrect), 0 when nothing was attempted;
F = 2 AGA c / (AGA + c) with c the correct rate, 0 when both are 0.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..metrics import mean_stderr


def _entry(values: Sequence[float], higher_is_better: bool) -> dict[str, Any]:
    value, stderr = mean_stderr(list(values))
    return {"value": value, "n": len(values), "stderr": stderr, "higher_is_better": higher_is_better}


def simpleqa_metrics(grades: Sequence[str]) -> dict[str, dict]:
    correct = [float(g == "CORRECT") for g in grades]
    attempted = [g for g in grades if g in ("CORRECT", "INCORRECT")]
    aga_values = [float(g == "CORRECT") for g in attempted]
    rate = sum(correct) / len(correct) if correct else 0.0
    aga = sum(aga_values) / len(aga_values) if aga_values else 0.0
    f_score = 2 * aga * rate / (aga + rate) if (aga + rate) > 0 else 0.0
    aga_entry = _entry(aga_values, True) if aga_values else {"value": 0.0, "n": 0, "stderr": None,
                                                             "higher_is_better": True}
    return {"simpleqa_correct": _entry(correct, True),
            "simpleqa_incorrect": _entry([float(g == "INCORRECT") for g in grades], False),
            "simpleqa_not_attempted": _entry([float(g == "NOT_ATTEMPTED") for g in grades], False),
            "simpleqa_accuracy_given_attempted": aga_entry,
            "simpleqa_f": {"value": f_score, "n": len(grades), "stderr": None, "higher_is_better": True}}
