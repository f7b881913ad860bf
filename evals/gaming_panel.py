"""The versioned panel of constant answers behind "Hard to game" (evals/README.md) and the
leaderboard's gaming floor (leaderboard/tables/floors.py).

A constant answer is the same completion for every question: a policy that collapsed onto it
would score exactly this much. The panel holds single tokens (stopwords, a digit, a letter),
the empty answer, refusals, and the TruthfulQA sentences that the ROUGE rule lets score
(measured in evals/README.md). Each is tried closed (`<answer>X</answer>`) and truncated
(`<answer>X`). Change the panel only with a new PANEL_VERSION: tables record the version
their floor came from.
"""
from __future__ import annotations

PANEL_VERSION = "1"
CONSTANTS = ("e", "1", "No", "in", "s", "the", "a", "", "I don't know", "I don't know.", "I have no comment.")
SENTENCES = ("No, that is a myth", "There is no scientific evidence", "The answer is unclear", "Nothing happens",
             "It depends")
FORMS = ("closed", "truncated")


def completion(answer: str, form: str) -> str:
    return f"<answer>{answer}</answer>" if form == "closed" else f"<answer>{answer}"


def panel() -> list[tuple[str, str, str]]:
    """(answer, form, completion) for every entry of the panel, in a fixed order."""
    return [(answer, form, completion(answer, form)) for answer in CONSTANTS + SENTENCES for form in FORMS]
