"""HotpotQA and 2WikiMultiHopQA answer scoring as their official scripts do it (docs/PROTOCOL.md §6).

Official normalisation: lower-case, delete ASCII punctuation (deleted, not spaced: "U.S."
-> "us"), drop the words a/an/the, collapse whitespace. EM is equality of normalised
strings. Token F1 is zero when either side normalises to yes/no/noanswer and the two
differ. 2Wiki takes the maximum over the answer, its aliases and its demonyms; HotpotQA
has one gold answer (a list of one).

Written for this harness from the published rules; no code is taken from the scripts.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from typing import Sequence

_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SPECIAL = frozenset({"yes", "no", "noanswer"})


def normalize_official(text: str) -> str:
    """HotpotQA/2Wiki normalisation (see module docstring)."""
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _f1(pred: str, gold: str) -> float:
    if (pred in _SPECIAL or gold in _SPECIAL) and pred != gold:
        return 0.0
    pred_tokens, gold_tokens = pred.split(), gold.split()
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def score_multihop(answer: str, golds: Sequence[str]) -> tuple[float, float]:
    """(EM, F1) of an extracted answer, each the maximum over `golds`.

    An empty answer scores (0, 0) against non-empty golds, as in the official scripts.
    """
    pred = normalize_official(answer)
    em = f1 = 0.0
    for gold in golds:
        norm = normalize_official(gold)
        if pred == norm:
            em = 1.0
        f1 = max(f1, _f1(pred, norm))
    return em, f1
