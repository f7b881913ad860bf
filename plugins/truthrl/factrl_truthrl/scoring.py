"""TruthRL's ternary decision on plain strings: no judge, no model (reward.py asks the judge).

The release's order (compute_score_llm_as_a_judge_ternary, truthrl_qa.py:670-749 in the copy
README.md cites): no answer -> wrong; an abstention -> abstain; "invalid question" -> wrong; an
exact match (after the release's normalisation) with any gold -> correct; otherwise the LLM judge
decides, per gold, and any gold it accepts makes the answer correct.
"""
from __future__ import annotations

import re
import string
from typing import Sequence

from factrl.harness.core.answers import is_refusal

# Outcomes before (or without) a judge call.
NO_ANSWER, ABSTAIN, INVALID, EXACT, GUARDED, ASK = "no_answer", "abstain", "invalid", "exact", "guarded", "ask"
# Final verdicts.
CORRECT, ABSTAINED, WRONG = "correct", "abstain", "wrong"

ABSTENTION_RULES = ("released", "protocol")
RELEASED_ABSTENTION = "i dont know"  # truthrl_qa.py:699 `"i dont know" in normalized_prediction`
RELEASED_INVALID = "invalid question"  # truthrl_qa.py:707 (CRAG's false-premise answer)

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def release_normalize(text: str) -> str:
    """The release's answer normalisation (truthrl_qa.py:251-265, SQuAD's): lower case, ASCII
    punctuation dropped, the articles a / an / the dropped as words, whitespace collapsed. So
    "I don't know" becomes "i dont know" (the protocol's normaliser gives "i don t know")."""
    lowered = str(text).lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", no_punct).split())


def abstains(answer: str, rule: str = "released") -> bool:
    """released: the normalised answer *contains* "i dont know" (so "Paris, but I don't know"
    abstains too); protocol: the answer is exactly one of the harness's abstention forms
    (harness.core.answers.is_refusal: "I don't know", "I do not know", "I have no comment")."""
    if rule == "released":
        return RELEASED_ABSTENTION in release_normalize(answer)
    if rule == "protocol":
        return is_refusal(answer)
    raise ValueError(f"abstention={rule!r}: choose one of {ABSTENTION_RULES}")


def exact_match(answer: str, golds: Sequence[str]) -> bool:
    """Any gold equal to the answer after release_normalize (truthrl_qa.py:715-721)."""
    normalized = release_normalize(answer)
    return any(release_normalize(g) == normalized for g in golds)


def first_decision(answer: str | None, golds: Sequence[str], *, abstention: str = "released") -> str:
    """What the release decides before asking its judge: NO_ANSWER, ABSTAIN, INVALID, EXACT, or ASK."""
    if answer is None:
        return NO_ANSWER
    if abstains(answer, abstention):
        return ABSTAIN
    if RELEASED_INVALID in release_normalize(answer):
        return INVALID
    return EXACT if exact_match(answer, golds) else ASK


def verdict(decision: str, judged: bool | None = None) -> str | None:
    """The final verdict from the first decision and, for ASK, whether the judge accepted the
    answer for some gold (None: it did not, and an item failed: no verdict, no signal)."""
    if decision == EXACT:
        return CORRECT
    if decision == ABSTAIN:
        return ABSTAINED
    if decision in (NO_ANSWER, INVALID, GUARDED):
        return WRONG
    if decision != ASK:
        raise ValueError(f"unknown decision {decision!r}")
    if judged is None:
        return None
    return CORRECT if judged else WRONG


def judged_correct(values: Sequence[object], oks: Sequence[bool]) -> bool | None:
    """Whether the judge accepted the answer for some gold: True as soon as one item says 1 (the
    release stops at the first gold it accepts, truthrl_qa.py:724-742, so the others cannot
    change the result); False when every item was answered and none said 1; None when none said
    1 and an item failed (the release scored that -1; here it is no signal: README, Fidelity)."""
    if any(ok and value == 1 for value, ok in zip(values, oks)):
        return True
    return None if not all(oks) else False


def reward_of(verdict_name: str | None, *, correct: float, abstain: float, wrong: float) -> float | None:
    """+1 / 0 / -1 by default (the ternary reward); None stays None."""
    if verdict_name is None:
        return None
    return {CORRECT: correct, ABSTAINED: abstain, WRONG: wrong}[verdict_name]


__all__ = ["ABSTAIN", "ABSTAINED", "ABSTENTION_RULES", "ASK", "CORRECT", "EXACT", "GUARDED", "INVALID", "NO_ANSWER",
           "RELEASED_ABSTENTION", "WRONG", "abstains", "exact_match", "first_decision", "judged_correct",
           "release_normalize", "reward_of", "verdict"]
