"""What a reward's answer guards read of one completion: strict accuracy's verdict on its answer
block, and whether a statement states one of the row's golds or the completion's own answer.

Shared by the guards of the fact-level rewards (RLFH's `answer_gate`, `positive_cap` and `answer_once`, FoRAG's
`positive_cap`: methods' READMEs, "Guards"), so each method reads an answer the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .matching import extract_answer, has_content, normalize_answer, prepare_references
from .strict import GAMING_REASONS, strict_correct


@dataclass(frozen=True)
class AnswerReading:
    credited: bool  # strict accuracy credits the completion's answer
    reason: str | None  # strict accuracy's reason when not credited (harness.core.answers.strict.REASONS)
    golds: tuple[str, ...]  # the row's golds with a content word, normalised and space-padded
    answer: str = ""  # the completion's answer, normalised and space-padded ("" without a content word)

    @property
    def withdrawn(self) -> bool:
        """Strict accuracy withdraws an answer the protocol's matcher may credit (GAMING_REASONS)."""
        return self.reason in GAMING_REASONS

    def states_gold(self, statement: str) -> bool:
        text = f" {normalize_answer(statement)} "
        return any(gold in text for gold in self.golds)

    def states_answer(self, statement: str) -> bool:
        return bool(self.answer) and self.answer in f" {normalize_answer(statement)} "


def read_answer(completion: str, golds: Sequence[str], question: str | None = None) -> AnswerReading:
    """The completion's answer block (the protocol's: the last) against the row's golds (and the
    row's question, which strict accuracy reads from v7)."""
    verdict = strict_correct(completion, [str(g) for g in golds], question=question)
    prepared = tuple(g for g in prepare_references(str(g) for g in golds) if has_content(g.strip()))
    answer = normalize_answer(extract_answer(completion or "", think=False).answer)
    return AnswerReading(verdict.correct, verdict.reason, prepared, f" {answer} " if has_content(answer) else "")


__all__ = ["AnswerReading", "read_answer"]
