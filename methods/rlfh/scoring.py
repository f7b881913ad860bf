"""Token rewards of one completion from its labels (echoed sentence -> statements with verdict and
score), as RLFH's labels_to_rewards computes them (AlignRM/RLFH@78cd846 source/feedback/reward.py:
86-249; vectors tests/reference_vectors/rlfh/rewards.json), plus the named guards.

- token (default): info(sentence) on the token of the echo's last matched character, each
  truth(statement) on its own token (placement.py); an unplaced statement adds nothing.
- sentence: the sentence's truths and info together on that last token (:191-221).
- paragraph: every truth and info on the completion's last token (:224-239).
Several rewards on one token add up.

Guards (docs/CONTRACTS.md "Guards"; both off = the original): `dedupe_statements` - a statement
whose normalised text (case-folded, spaces collapsed, final punctuation dropped) already
occurred in the completion earns no positive truth reward; `max_rewarded_statements: N` - only
the first N statements (in reply order, repeats not counted when deduplicating) earn positive
truth reward; `answer_gate: strict` - the answer block read by strict accuracy v2
(factrl.harness.answers.strict) against the row's golds: a completion whose answer strict v2
withdraws as gaming (several answer blocks, the gold negated, retracted or listed among other
candidates) earns no positive term, and in a completion whose answer strict v2 does not credit,
a statement that states a gold (a gold with a content word occurs in it on token boundaries) is
scored as Wrong: the completion says the gold and answers otherwise. A sentence none of whose
statements may earn positive reward keeps only a negative info reward. A guard only ever sets
positive terms to 0 or scores a statement Wrong (the lowest verdict), so it never raises a
return: penalties (Wrong, Vague, a sentence below the log floor) always count.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Sequence

from factrl.harness.answers import GAMING_REASONS, has_content, normalize_answer, prepare_references, strict_correct

from . import placement
from .settings import Constants

_SPACES = re.compile(r"\s+")
GOLD_NOT_ANSWERED, ANSWER_WITHDRAWN = "gold_not_answered", "answer_withdrawn"


@dataclass
class Statement:
    text: str
    verdict: str | None = None
    score: int | None = None
    fallback: bool = False  # the release's value for a failed item (judge_failure: released)
    char: int | None = None  # alignment offset of its truth reward's character (None: not placed)
    token: int | None = None
    truth: float | None = None
    duplicate: bool = False
    rewarded: bool = True  # may earn positive reward (guards)
    gated: str | None = None  # answer_gate: GOLD_NOT_ANSWERED (scored Wrong) | ANSWER_WITHDRAWN | None


@dataclass
class Echo:
    text: str
    statements: list[Statement]
    hedged: bool = False
    end: int | None = None  # alignment offset of its last matched character
    sentence: int | None = None  # the alignment sentence holding `end` (records)
    token: int | None = None
    info: float | None = None


@dataclass
class Outcome:
    rewards: list[float]
    infos: list[float] = field(default_factory=list)
    clipped: int = 0  # positive terms a guard set to 0
    gated: int = 0  # statements answer_gate scored Wrong (GOLD_NOT_ANSWERED)


@dataclass(frozen=True)
class AnswerGate:
    """What `answer_gate: strict` reads of one completion (module docstring)."""

    credited: bool  # strict accuracy v2 credits its answer
    reason: str | None  # strict v2's reason when not credited (factrl.harness.answers.strict.REASONS)
    golds: tuple[str, ...]  # the row's golds with a content word, normalised and space-padded

    @property
    def withdrawn(self) -> bool:
        return self.reason in GAMING_REASONS

    def states_gold(self, statement: str) -> bool:
        text = f" {normalize_answer(statement)} "
        return any(gold in text for gold in self.golds)


def read_answer(completion: str, golds: Sequence[str]) -> AnswerGate:
    verdict = strict_correct(completion, [str(g) for g in golds])
    prepared = tuple(g for g in prepare_references(str(g) for g in golds) if has_content(g.strip()))
    return AnswerGate(verdict.correct, verdict.reason, prepared)


def place(echo: Echo, judged: placement.Judged, alignment, min_share: float) -> bool:
    """Locate `echo` in the judged response and its statements' truth characters (placement.py);
    False when the response holds no long enough run of it (the completion gets no signal)."""
    positions = placement.locate(echo.text, judged.text, min_share)
    if positions is None:
        return False
    echo.end = judged.to_alignment(max(positions))
    echo.sentence = placement.sentence_at(alignment, echo.end)
    chars = placement.statement_chars(echo.text, [st.text for st in echo.statements], positions)
    for st, char in zip(echo.statements, chars):
        st.char = None if char is None else judged.to_alignment(char)
    return True


def normalised(statement: str) -> str:
    return _SPACES.sub(" ", statement.casefold()).strip().rstrip(".!?;:, ")


def mark_guards(echoes: Sequence[Echo], *, dedupe: bool, max_rewarded: int | None,
                gate: AnswerGate | None = None) -> None:
    seen: set[str] = set()
    counted = 0
    for echo in echoes:
        for st in echo.statements:
            key = normalised(st.text)
            st.duplicate = key in seen
            seen.add(key)
            if gate is not None and not gate.credited and gate.states_gold(st.text):
                st.gated = GOLD_NOT_ANSWERED
            elif gate is not None and gate.withdrawn:
                st.gated = ANSWER_WITHDRAWN
            if dedupe and st.duplicate:
                st.rewarded = False
                continue
            st.rewarded = (max_rewarded is None or counted < max_rewarded) and st.gated is None
            counted += 1


def truth(table: Constants, st: Statement) -> float:
    verdict = "wrong" if st.gated == GOLD_NOT_ANSWERED else st.verdict
    return table.w_truth * table.verdict[verdict] * abs(table.info[st.score])


def info(table: Constants, statements: Sequence[Statement]) -> float:
    return table.w_info * math.log(max(table.eps, sum(table.info[st.score] for st in statements)) + table.mu)


def _at(spans: Sequence, position: int | None, length: int) -> int | None:
    if position is None:
        return None
    token = placement.token_for(spans, position)
    return length - 1 if token is None else min(token, length - 1)


def score(echoes: Sequence[Echo], spans: Sequence, length: int, table: Constants, *, granularity: str,
          dedupe: bool = False, max_rewarded: int | None = None, gate: AnswerGate | None = None) -> Outcome:
    """The completion's per-token rewards; every statement of `echoes` has a verdict and a score.
    gate: the completion's answer as `answer_gate: strict` reads it (read_answer), None = off."""
    out = Outcome([0.0] * length)
    if length == 0:
        return out
    kept = [e for e in echoes if not e.hedged and e.statements]
    mark_guards(kept, dedupe=dedupe, max_rewarded=max_rewarded, gate=gate)
    for echo in kept:
        for st in echo.statements:
            value = truth(table, st)
            out.gated += st.gated == GOLD_NOT_ANSWERED
            if not st.rewarded and value > 0:
                value, out.clipped = 0.0, out.clipped + 1
            st.truth = value
        value = info(table, echo.statements)
        if not any(st.rewarded for st in echo.statements) and value > 0:
            value, out.clipped = 0.0, out.clipped + 1
        echo.info = value
        out.infos.append(value)
        echo.token = _at(spans, echo.end, length)
        if granularity == "token":
            out.rewards[echo.token] += echo.info
            for st in echo.statements:
                st.token = _at(spans, st.char, length)
                if st.token is not None:
                    out.rewards[st.token] += st.truth
        elif granularity == "sentence":
            out.rewards[echo.token] += sum(st.truth for st in echo.statements) + echo.info
        else:  # paragraph
            out.rewards[-1] += sum(st.truth for st in echo.statements) + echo.info
    return out


__all__ = ["ANSWER_WITHDRAWN", "AnswerGate", "Echo", "GOLD_NOT_ANSWERED", "Outcome", "Statement", "info",
           "mark_guards", "normalised", "place", "read_answer", "score", "truth"]
