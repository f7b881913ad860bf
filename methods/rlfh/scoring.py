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
truth reward; `answer_gate: strict` - the answer block read by strict accuracy
(factrl.harness.core.answers.strict) against the row's golds: a completion whose answer strict v2
withdraws as gaming (several answer blocks, the gold negated, retracted or listed among other
candidates) earns no positive term, and in a completion whose answer strict v2 does not credit,
a statement that states a gold (a gold with a content word occurs in it on token boundaries) is
scored as Wrong: the completion says the gold and answers otherwise; `positive_cap: answer` - a
completion whose answer strict accuracy does not credit (a wrong answer, a refusal, no answer,
or one it withdraws) earns positive terms only in the sentences that state that answer (its
statements there are never Correct: a judge's Correct is scored Wrong, its Vague or Wrong
stands; they keep their sentence's info term, as the honest wrong answer's do); every other
statement earns no positive term, truth or
info. So true sentences of the row's own article before a wrong answer, or a judge that labels
a wrong answer's statements Correct, pay a wrong answer nothing above the honest wrong answer
(judge-independent: strict accuracy decides, not the judge). A true sentence that names the
wrong answer's entity ("She worked in Paris" beside the answer "Paris") is scored Wrong too.
`answer_once: true` - in a completion whose answer strict accuracy credits, only the first
statement (in reply order) that states the answer (a gold, or the answer block's text, on token
boundaries) may earn a positive term; every later one earns none and is not counted towards
`max_rewarded_statements` (a doubled answer, "GOLD. So the answer is GOLD.", is paid as one
statement of it, as the honest correct answer is). A sentence none of whose
statements may earn positive reward keeps only a negative info reward. A guard only ever sets
positive terms to 0 or scores a statement Wrong (the lowest verdict), so it never raises a
return: penalties (Wrong, Vague, a sentence below the log floor) always count.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Sequence

from factrl.harness.core.answers.reading import AnswerReading, read_answer
from factrl.harness.services.judge.spec import neutralised

from . import placement
from .settings import Constants

_SPACES = re.compile(r"\s+")
GOLD_NOT_ANSWERED, ANSWER_WITHDRAWN = "gold_not_answered", "answer_withdrawn"
ANSWER_NOT_CREDITED = "answer_not_credited"  # positive_cap: no positive term
ANSWER_STATED = "answer_stated"  # positive_cap: a statement of the uncredited answer; a Correct is scored Wrong
ANSWER_REPEATED = "answer_repeated"  # answer_once: a later statement of the credited answer; no positive term


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
    gated: str | None = None  # GOLD_NOT_ANSWERED (scored Wrong) | ANSWER_WITHDRAWN | ANSWER_NOT_CREDITED | None


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


AnswerGate = AnswerReading  # what `answer_gate` / `positive_cap` read (factrl.harness.core.answers.reading)


def place(echo: Echo, judged: placement.Judged, alignment, min_share: float) -> bool:
    """Locate `echo` in the judged response and its statements' truth characters (placement.py);
    False when the response holds no long enough run of it (the completion gets no signal).

    Both are read as the judge saw them (`neutralised`: a `<material-` or `</material-` the
    completion wrote is shown as `‹material-`, one character for one): a judge that echoes what it
    was shown matches, so a completion cannot lose its signal, and with it a penalty, by writing
    the delimiter (docs/CONTRACTS.md "Material, never instructions")."""
    positions = placement.locate(neutralised(echo.text), neutralised(judged.text), min_share)
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
                gate: AnswerGate | None = None, cap: AnswerGate | None = None,
                once: AnswerGate | None = None) -> None:
    seen: set[str] = set()
    counted = 0
    answered = False  # answer_once: a statement of the credited answer came before
    for echo in echoes:
        for st in echo.statements:
            key = normalised(st.text)
            st.duplicate = key in seen
            seen.add(key)
            if gate is not None and not gate.credited and gate.states_gold(st.text):
                st.gated = GOLD_NOT_ANSWERED
            elif gate is not None and gate.withdrawn:
                st.gated = ANSWER_WITHDRAWN
            elif cap is not None and not cap.credited:
                st.gated = ANSWER_STATED if cap.states_answer(st.text) else ANSWER_NOT_CREDITED
            elif once is not None and once.credited and (once.states_gold(st.text) or once.states_answer(st.text)):
                st.gated, answered = (ANSWER_REPEATED if answered else None), True
            if (dedupe and st.duplicate) or st.gated == ANSWER_REPEATED:  # repeats do not count towards N
                st.rewarded = False
                continue
            st.rewarded = (max_rewarded is None or counted < max_rewarded) and st.gated in (None, ANSWER_STATED)
            counted += 1


def truth(table: Constants, st: Statement) -> float:
    verdict = st.verdict
    if st.gated == GOLD_NOT_ANSWERED or (st.gated == ANSWER_STATED and verdict == "correct"):
        verdict = "wrong"  # positive_cap: no judge makes the uncredited answer Correct (Vague stays Vague)
    return table.w_truth * table.verdict[verdict] * abs(table.info[st.score])


def info(table: Constants, statements: Sequence[Statement]) -> float:
    return table.w_info * math.log(max(table.eps, sum(table.info[st.score] for st in statements)) + table.mu)


def _at(spans: Sequence, position: int | None, length: int) -> int | None:
    if position is None:
        return None
    token = placement.token_for(spans, position)
    return length - 1 if token is None else min(token, length - 1)


def score(echoes: Sequence[Echo], spans: Sequence, length: int, table: Constants, *, granularity: str,
          dedupe: bool = False, max_rewarded: int | None = None, gate: AnswerGate | None = None,
          cap: AnswerGate | None = None, once: AnswerGate | None = None) -> Outcome:
    """The completion's per-token rewards; every statement of `echoes` has a verdict and a score.
    gate / cap / once: the completion's answer as `answer_gate: strict` / `positive_cap: answer` /
    `answer_once: true` read it (read_answer), None = off."""
    out = Outcome([0.0] * length)
    if length == 0:
        return out
    kept = [e for e in echoes if not e.hedged and e.statements]
    mark_guards(kept, dedupe=dedupe, max_rewarded=max_rewarded, gate=gate, cap=cap, once=once)
    for echo in kept:
        for st in echo.statements:
            value = truth(table, st)
            out.gated += st.gated == GOLD_NOT_ANSWERED or (st.gated == ANSWER_STATED and st.verdict == "correct")
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


__all__ = ["ANSWER_NOT_CREDITED", "ANSWER_REPEATED", "ANSWER_STATED", "ANSWER_WITHDRAWN", "AnswerGate", "Echo", "GOLD_NOT_ANSWERED", "Outcome", "Statement", "info",
           "mark_guards", "normalised", "place", "read_answer", "score", "truth"]
