"""The judged checks of one set's answers: semantic correctness, TruthfulQA truthful /
informative, and SimpleQA's three-way grade. Each takes the judge, the set, its completions
(in record order) and the indexes of its sample, and returns (metrics entries, section,
per-sample rows). A failed judgement (transport budget spent, refused, or unreadable after the
re-asks) is counted in the section and left out of every denominator, never guessed; above
`judge.max_failed_share` of a batch the evaluation stops with the counts
(JudgeFailuresExceeded), and a rerun asks only for what is not cached yet.
"""
from __future__ import annotations

from typing import Any, Sequence

from factrl.harness.core.answers import extract_answer
from ..metrics import mean_stderr

from .grader import SIMPLEQA_GRADER
from .prompts import INFORMATIVE, SEMANTIC_GRADE, TRUTHFUL, prompt_info
from .simpleqa import simpleqa_metrics


def _entry(values: Sequence[float]) -> dict[str, Any]:
    value, stderr = mean_stderr(list(values))
    return {"value": value, "n": len(values), "stderr": stderr, "higher_is_better": True}


def _ask(judge: Any, prompt: Any, items: list[dict], where: str) -> list[Any]:
    results = judge.ask_many(prompt, items) if items else []
    judge.check_failed_share(results, where=where)
    return results


def _section(judge: Any, prompts: list, indexes: Sequence[int], seed: int, size: int | None,
             **counts: int) -> dict[str, Any]:
    return {"judge": judge.describe(), "prompts": [prompt_info(p) for p in prompts], "seed": seed,
            "sample_size": size, "sampled": len(indexes), **counts}


def semantic_correctness(judge: Any, eval_set: Any, completions: Sequence[str], indexes: Sequence[int], *,
                         seed: int, size: int | None) -> tuple[dict, dict, list[dict]]:
    """`semantic_accuracy`: the share of judged answers graded CORRECT."""
    records = [eval_set.records[i] for i in indexes]
    answers = [extract_answer(completions[i], think=False).answer for i in indexes]
    items = [{"question": r.question, "gold": list(r.references), "answer": a} for r, a in zip(records, answers)]
    results = _ask(judge, SEMANTIC_GRADE, items, f"semantic check of {eval_set.name}")
    graded = [r.value == "CORRECT" for r in results if r.ok]
    failed = sum(1 for r in results if not r.ok)
    rows = [{"id": rec.id, "answer": a, "grade": res.value, "error": res.error}
            for rec, a, res in zip(records, answers, results)]
    metrics = {"semantic_accuracy": _entry([float(g) for g in graded])}
    return metrics, _section(judge, [SEMANTIC_GRADE], indexes, seed, size, graded=len(graded), failed=failed), rows


def truthfulqa_checks(judge: Any, eval_set: Any, completions: Sequence[str], indexes: Sequence[int], *,
                      seed: int, size: int | None) -> tuple[dict, dict, list[dict]]:
    """`semantic_truthful`, `semantic_informative`, `semantic_truthful_informative` (both)."""
    records = [eval_set.records[i] for i in indexes]
    answers = [extract_answer(completions[i], think=False).answer for i in indexes]
    truthful = _ask(judge, TRUTHFUL, [{"question": r.question, "correct": list(r.references),
                                       "incorrect": list(r.incorrect), "answer": a}
                                      for r, a in zip(records, answers)], "TruthfulQA truthful check")
    informative = _ask(judge, INFORMATIVE, [{"question": r.question, "answer": a}
                                            for r, a in zip(records, answers)], "TruthfulQA informative check")
    both = [float(t.value and i.value) for t, i in zip(truthful, informative) if t.ok and i.ok]
    metrics = {"semantic_truthful": _entry([float(t.value) for t in truthful if t.ok]),
               "semantic_informative": _entry([float(i.value) for i in informative if i.ok]),
               "semantic_truthful_informative": _entry(both)}
    rows = [{"id": rec.id, "answer": a, "truthful": t.value, "informative": i.value,
             "error": t.error or i.error} for rec, a, t, i in zip(records, answers, truthful, informative)]
    section = _section(judge, [TRUTHFUL, INFORMATIVE], indexes, seed, size,
                       truthful_failed=sum(not t.ok for t in truthful),
                       informative_failed=sum(not i.ok for i in informative), graded_both=len(both))
    return metrics, section, rows


def simpleqa_grades(judge: Any, eval_set: Any, completions: Sequence[str], indexes: Sequence[int], *,
                    seed: int, size: int | None, graded_text: str, prompt: Any = SIMPLEQA_GRADER
                    ) -> tuple[dict, dict, list[dict]]:
    """SimpleQA's own grader (A correct / B incorrect / C not attempted) and its AGA / F.

    graded_text "response": the whole completion, as simple-evals grades it (simpleqa_eval.py
    :133-136); "answer": the extracted final answer only (a named difference)."""
    if graded_text not in ("response", "answer"):
        raise ValueError(f"graded_text={graded_text!r}: use response or answer")
    records = [eval_set.records[i] for i in indexes]
    answers = [extract_answer(completions[i], think=False).answer for i in indexes]
    graded = [completions[i] if graded_text == "response" else a for i, a in zip(indexes, answers)]
    items = [{"question": r.question, "gold": list(r.references[:1]) or [""], "response": g, "answer": a}
             for r, g, a in zip(records, graded, answers)]
    results = _ask(judge, prompt, items, f"SimpleQA grader on {eval_set.name}")
    grades = [r.value for r in results if r.ok]
    metrics = simpleqa_metrics(grades)
    rows = [{"id": rec.id, "answer": a, "grade": res.value, "error": res.error}
            for rec, a, res in zip(records, answers, results)]
    section = _section(judge, [prompt], indexes, seed, size, graded=len(grades),
                       failed=sum(not r.ok for r in results))
    section["graded_text"] = graded_text
    return metrics, section, rows
