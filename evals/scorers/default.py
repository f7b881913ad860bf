"""`scorer=default`: docs/PROTOCOL.md §6 (closed-book token-boundary matching, TruthfulQA's ROUGE-1
decision with the harness's two guards, multi-hop official EM/F1).

`SCORER_VERSION` versions everything this scorer decides: the answer helpers it is built on
(factrl.harness.core.answers, whose behaviour tests/evals/test_eval_version.py fingerprints) and the
task rules (factrl.evals.rules). It is written into every metrics file; tables compare only
equal versions, and leaderboard/store/versions.py freezes it.
"""
from __future__ import annotations

from typing import Sequence

from factrl.harness.core import registry
from factrl.harness.core.answers import REFUSALS, SCORER_VERSION, extract_answer, match_prepared, normalize_answer
from factrl.harness.core.errors import HarnessError

from ..metrics import DIAGNOSTICS, Metric, SampleTable
from ..rules.multihop import score_multihop
from ..rules.truthfulqa import decide as truthfulqa_decide
from ..sets import EvalSet
from .base import COMMON_FIELDS, Scorer
from .registry import UNSET

# SCORER_VERSION is kept beside the answer helpers it pins (harness/core/answers/__init__.py) and bumped
# there whenever extraction, normalisation, stopwords, the refusal list, matching or a task rule
# changes (dated line in evals/README.md's changelog).

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

DIAGNOSTIC_FIELDS = ("refusal", "empty", "na", "format_ok", "closed", "n_answer_tags", "answer_words",
                     "completion_words")
CLOSED_BOOK_FIELDS = COMMON_FIELDS + ("correct", "correct_one_way") + DIAGNOSTIC_FIELDS
TRUTHFULQA_FIELDS = COMMON_FIELDS + ("incorrect", "correct", "rouge_correct", "rouge_incorrect",
                                     "content") + DIAGNOSTIC_FIELDS
MULTIHOP_FIELDS = COMMON_FIELDS + ("em", "f1") + DIAGNOSTIC_FIELDS


class DefaultScorer(Scorer):
    """docs/PROTOCOL.md §6. Options: `truthfulqa_no_comment` adds "I have no comment." to TruthfulQA's
    correct answers and scores refusals there by ROUGE (lm-eval's variant; off by default);
    `truthfulqa_content_guard` (on by default) scores TruthfulQA answers without a content token
    as wrong unless the question lists that answer as correct (against stopword constants; off
    gives docs/PROTOCOL.md §6's bare ROUGE decision)."""

    name = "default"
    version = SCORER_VERSION
    OPTIONS = dict(UNSET)  # both of the harness's scorer options, at their eval/base.yaml values

    def metrics(self, task: str) -> Sequence[Metric]:
        own = {"closed_book": CLOSED_BOOK_METRICS, "truthfulqa": TRUTHFULQA_METRICS, "multihop": MULTIHOP_METRICS}
        return own[task] if task in own else self._task_rule(task).metrics(dict(self.options))

    def score(self, eval_set: EvalSet, completions: Sequence[str]) -> SampleTable:
        own = {"closed_book": self._closed_book, "truthfulqa": self._truthfulqa, "multihop": self._multihop}
        if eval_set.task in own:
            return own[eval_set.task](eval_set, completions)
        return self._task_rule(eval_set.task).score(eval_set, completions, dict(self.options))

    @staticmethod
    def _task_rule(task: str):
        """A registered task's own rule (a plugin's task type, docs/ADDING_AN_EVAL_SET.md)."""
        info = registry.get("tasks", task)
        if not info.rule:
            raise HarnessError(f"task '{task}' has no rule of its own and the default scorer has none for it.")
        return registry.resolve(info.rule)

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
                    len(answer.split()), len(completion.split())))
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
                               ex.format_ok, ex.closed, ex.n_answer_tags, len(ex.answer.split()),
                               len(completion.split())))
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
                               ex.n_answer_tags, len(ex.answer.split()), len(completion.split())))
        return table
