"""`scorer=corver-official`: the released CorVer evaluation script's behaviour, for comparison.

Reimplemented from the script's documented behaviour (train/eval_triviaqa.py in the public
CorVer repository), so numbers can be compared with ones that script produced. It is *not*
hard to game; use it only to reproduce published numbers. What it does, in its order:

- extraction: everything after the first `<answer>` tag, stripped, closing tag and any text
  after it included ("Paris</answer>"); no tag -> "".
- not attempted: the extracted text is empty, or its lower-cased, stripped form is exactly
  "i don't know" or "i do not know" (before normalisation: "I don't know." with a period, or
  "I don't know</answer>", is an attempted answer).
- normalisation: NFKD, lower-case, strip, the words a/an/the replaced by a space, every
  character that is not a word character or whitespace replaced by a space (combining accents
  become spaces: "Müller" -> "mu ller"; "_" is kept), spaces collapsed; empty -> not attempted.
- correct: for the gold answer then each alias (empty normalisations skipped), equality or
  character-level substring in either direction (so "1" matches "1945", and "e" matches
  almost every reference).
- format: the completion (with "<think>" prepended when it does not start with it) matches
  `<think>.*?</think>.*?<answer>`, a closing tag not required.
- TruthfulQA: the same substring rule against the best and correct answers (the script's
  data file lists them as answer and aliases); incorrect answers are not used.

The differences from the default scorer are tabulated in evals/README.md. Case is folded
with `lower()`, as the script does (the default scorer uses `casefold()`).
"""
from __future__ import annotations

import re
import unicodedata
from typing import Sequence

from factrl.harness.core.errors import HarnessError

from ..metrics import Metric, SampleTable
from ..sets import EvalSet
from .base import COMMON_FIELDS, Scorer

VERSION = "corver-eval_triviaqa@36b2390"  # the released script's commit this mirrors

_ANSWER_REST = re.compile(r"<answer>(.*)", re.DOTALL)
_FORMAT = re.compile(r"<think>.*?</think>.*?<answer>", re.DOTALL)
_ARTICLE_WORDS = re.compile(r"\b(a|an|the)\b")
_NOT_WORD = re.compile(r"[^\w\s]")
_SPACES = re.compile(r"\s+")
NOT_ATTEMPTED = frozenset({"i don't know", "i do not know", ""})

FIELDS = COMMON_FIELDS + ("grade", "correct", "incorrect", "na", "format_ok", "answer_words", "completion_words")
METRICS = (
    Metric("accuracy", "correct", True, "CORRECT / total, as the released script reports correct_rate"),
    Metric("incorrect_rate", "incorrect", False, "INCORRECT / total"),
    Metric("na_rate", "na", False, "NOT_ATTEMPTED / total"),
    Metric("format_rate", "format_ok", True, "think block then an answer tag (closing tag optional)"),
    Metric("mean_answer_words", "answer_words", False, "whitespace words in the extracted text"),
    Metric("mean_completion_words", "completion_words", False, "whitespace words in the whole completion"),
)


def corver_normalize(text: str) -> str:
    text = unicodedata.normalize("NFKD", text).lower().strip()
    text = _NOT_WORD.sub(" ", _ARTICLE_WORDS.sub(" ", text))
    return _SPACES.sub(" ", text).strip()


def corver_extract(completion: str) -> str:
    match = _ANSWER_REST.search(completion)
    return match.group(1).strip() if match else ""


def corver_grade(predicted: str, references: Sequence[str]) -> str:
    """CORRECT, INCORRECT or NOT_ATTEMPTED, as the released script grades."""
    if predicted.lower().strip() in NOT_ATTEMPTED:
        return "NOT_ATTEMPTED"
    pred = corver_normalize(predicted)
    if not pred:
        return "NOT_ATTEMPTED"
    for ref in references:
        gold = corver_normalize(ref)
        if gold and (gold in pred or pred in gold):  # equality is the special case of both
            return "CORRECT"
    return "INCORRECT"


def corver_format_ok(completion: str) -> bool:
    text = completion if completion.startswith("<think>") else "<think>" + completion
    return _FORMAT.search(text) is not None


class CorverOfficialScorer(Scorer):
    name = "corver-official"
    version = VERSION  # takes no options: the released script has none

    def metrics(self, task: str) -> Sequence[Metric]:
        if task not in ("closed_book", "truthfulqa"):
            raise HarnessError(f"scorer=corver-official covers the closed-book sets and TruthfulQA only, "
                               f"not {task} sets; use scorer=default.")
        return METRICS

    def score(self, eval_set: EvalSet, completions: Sequence[str]) -> SampleTable:
        self.metrics(eval_set.task)
        table = SampleTable(FIELDS)
        for record, completion in zip(eval_set.records, completions):
            predicted = corver_extract(completion)
            grade = corver_grade(predicted, record.references)
            table.data.append((record.id, record.question, completion, predicted, record.references, grade,
                               grade == "CORRECT", grade == "INCORRECT", grade == "NOT_ATTEMPTED",
                               corver_format_ok(completion), len(predicted.split()),
                               len(completion.split())))
        return table
