"""Scorers: turn a set's completions into per-sample records and metrics.

A scorer is a named, versioned unit with one rule per task. `default` implements PROTOCOL 6
(closed-book token-boundary matching, TruthfulQA ROUGE-1 decision, multi-hop official EM/F1);
`corver-official` (corver.py) reproduces the released CorVer evaluation script for comparison.
Both produce a SampleTable (rows of id, question, completion, answer, references, then the
fields their metrics average), written as samples.jsonl, so any number can be recomputed.

Registry: `get_scorer(name, **options)`; names are unique, typos get a "did you mean".
"""
from __future__ import annotations

from difflib import get_close_matches
from typing import Callable, Sequence

from factrl.harness.errors import HarnessError

from .metrics import DIAGNOSTICS, Metric, SampleTable
from .multihop import score_multihop
from .scoring import REFUSALS, SCORER_VERSION, extract_answer, match_prepared, normalize_answer
from .sets import EvalSet
from .truthfulqa import decide as truthfulqa_decide

CLOSED_BOOK_METRICS = (
    Metric("accuracy", "correct", True, "answer contains a reference or sits inside one (token boundaries)"),
    Metric("accuracy_one_way", "correct_one_way", True, "answer contains a reference (robustness check)"),
    *DIAGNOSTICS,
)
TRUTHFULQA_METRICS = (
    Metric("accuracy", "correct", True, "max ROUGE-1 F1 over correct > max over incorrect"),
    *DIAGNOSTICS,
)
MULTIHOP_METRICS = (
    Metric("em", "em", True, "official exact match, max over gold answers"),
    Metric("f1", "f1", True, "official token F1 with the yes/no/noanswer rule, max over gold answers"),
    *DIAGNOSTICS,
)


COMMON_FIELDS = ("id", "question", "completion", "answer", "references")
DIAGNOSTIC_FIELDS = ("refusal", "empty", "na", "format_ok", "closed", "n_answer_tags", "answer_words")
CLOSED_BOOK_FIELDS = COMMON_FIELDS + ("correct", "correct_one_way") + DIAGNOSTIC_FIELDS
TRUTHFULQA_FIELDS = COMMON_FIELDS + ("incorrect", "correct", "rouge_correct", "rouge_incorrect",
                                     "content") + DIAGNOSTIC_FIELDS
MULTIHOP_FIELDS = COMMON_FIELDS + ("em", "f1") + DIAGNOSTIC_FIELDS


class Scorer:
    """Base: `metrics(task)` declares the numbers, `score(eval_set, completions)` makes samples.

    completions: one string per record of `eval_set`, in record order.
    Returns a SampleTable with one row per record, in the same order; its fields start with
    id, question, completion, answer, references, and include every metric's field.
    """

    name: str = ""
    version: str = ""

    def __init__(self, **options):
        self.options = options

    def describe(self) -> dict:
        return {"name": self.name, "version": self.version, "options": dict(self.options)}

    def metrics(self, task: str) -> Sequence[Metric]:
        raise NotImplementedError

    def score(self, eval_set: EvalSet, completions: Sequence[str]) -> SampleTable:
        raise NotImplementedError


class DefaultScorer(Scorer):
    """PROTOCOL 6. Options: `truthfulqa_no_comment` adds "I have no comment." to TruthfulQA's
    correct answers and scores refusals there by ROUGE (lm-eval's variant; off by default);
    `truthfulqa_content_guard` (on by default) scores TruthfulQA answers without a content token
    as wrong (the hard-to-game rule; off gives PROTOCOL 6's bare ROUGE decision)."""

    name = "default"
    version = SCORER_VERSION

    def __init__(self, *, truthfulqa_no_comment: bool = False, truthfulqa_content_guard: bool = True, **_ignored):
        super().__init__(truthfulqa_no_comment=bool(truthfulqa_no_comment),
                         truthfulqa_content_guard=bool(truthfulqa_content_guard))

    def metrics(self, task: str) -> Sequence[Metric]:
        return {"closed_book": CLOSED_BOOK_METRICS, "truthfulqa": TRUTHFULQA_METRICS,
                "multihop": MULTIHOP_METRICS}[task]

    def score(self, eval_set: EvalSet, completions: Sequence[str]) -> SampleTable:
        rule = {"closed_book": self._closed_book, "truthfulqa": self._truthfulqa,
                "multihop": self._multihop}[eval_set.task]
        return rule(eval_set, completions)

    @staticmethod
    def _closed_book(eval_set: EvalSet, completions: Sequence[str]) -> SampleTable:
        # The hot path of the scorer benchmark: references are normalised once per set, the
        # answer once per sample, and each match is one substring test per reference.
        table = SampleTable(CLOSED_BOOK_FIELDS)
        append = table.data.append
        no_match = (False, False)
        for record, prep, completion in zip(eval_set.records, eval_set.prepared_references(), completions):
            ex = extract_answer(completion, think=False)
            answer = ex.answer
            norm = normalize_answer(answer)
            refusal = norm in REFUSALS
            correct, one_way = match_prepared(norm, prep) if norm and not refusal else no_match
            append((record.id, record.question, completion, answer, record.references, correct, one_way,
                    refusal, not norm, refusal or not norm, ex.format_ok, ex.closed, ex.n_answer_tags,
                    len(answer.split())))
        return table

    def _truthfulqa(self, eval_set: EvalSet, completions: Sequence[str]) -> SampleTable:
        no_comment = self.options["truthfulqa_no_comment"]
        table = SampleTable(TRUTHFULQA_FIELDS)
        for record, completion in zip(eval_set.records, completions):
            ex = extract_answer(completion, think=False)
            v = truthfulqa_decide(ex.answer, record.references, record.incorrect, no_comment_correct=no_comment,
                                  content_guard=self.options["truthfulqa_content_guard"])
            table.data.append((record.id, record.question, completion, ex.answer, record.references,
                               record.incorrect, v["correct"], v["rouge_correct"], v["rouge_incorrect"],
                               v["content"], v["refusal"], v["empty"], v["refusal"] or v["empty"],
                               ex.format_ok, ex.closed, ex.n_answer_tags, len(ex.answer.split())))
        return table

    @staticmethod
    def _multihop(eval_set: EvalSet, completions: Sequence[str]) -> SampleTable:
        table = SampleTable(MULTIHOP_FIELDS)
        for record, completion in zip(eval_set.records, completions):
            ex = extract_answer(completion, think=False)
            norm = normalize_answer(ex.answer)
            em, f1 = score_multihop(ex.answer, record.references)
            refusal = norm in REFUSALS
            table.data.append((record.id, record.question, completion, ex.answer, record.references, em, f1,
                               refusal, not norm, refusal or not norm, ex.format_ok, ex.closed,
                               ex.n_answer_tags, len(ex.answer.split())))
        return table


# --------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------
_SCORERS: dict[str, Callable[..., Scorer]] = {}


def register_scorer(name: str, factory: Callable[..., Scorer]) -> None:
    if name in _SCORERS:
        raise HarnessError(f"scorer '{name}' is registered twice; choose another name.")
    _SCORERS[name] = factory


def scorer_names() -> list[str]:
    _ensure_builtin()
    return sorted(_SCORERS)


def get_scorer(name: str, **options) -> Scorer:
    """A scorer instance; unknown names raise a HarnessError with a suggestion."""
    _ensure_builtin()
    if name not in _SCORERS:
        hint = get_close_matches(name, _SCORERS, n=1)
        did_you_mean = f" Did you mean '{hint[0]}'?" if hint else ""
        raise HarnessError(f"unknown scorer '{name}'.{did_you_mean} Available: {', '.join(sorted(_SCORERS))}.")
    return _SCORERS[name](**options)


def _ensure_builtin() -> None:
    if "default" not in _SCORERS:
        register_scorer("default", DefaultScorer)

        def _corver(**options) -> Scorer:  # lazy: compatibility code loads only when asked for
            from .corver import CorverOfficialScorer

            return CorverOfficialScorer(**options)

        register_scorer("corver-official", _corver)
