"""Heuristic claims of a text, with no model: sentences -> capitalised-span triples -> claim strings.

`heuristic_triples(sentence)` is CorVer's heuristic extractor (methods/corver/extractor.py,
backend `heuristic`): capitalised / numeric runs are names; consecutive names are linked by the
words between them ([head, relation, tail]); a single name followed by `is/was/are/were ...`
gives [name, copula, rest]. `claims(text)` joins each triple into one short claim sentence,
sentence by sentence (harness.core.completions' reference splitter), deduplicated case-insensitively:
the reference judge's answer to "list the atomic facts of this text" (harness/services/judge/reference.py).
A sentence with no name (an opinion, a refusal, filler) yields no claim.

Deterministic, linear in the text's length. Change a rule and bump `CLAIMS_VERSION` (it is in
the reference judge's component) - and the CorVer extractor's results change with it.
"""
from __future__ import annotations

import re

from .completions import split_sentences


CLAIMS_VERSION = "1"

_WORD = re.compile(r"[^\W_](?:[\w'’.\-&]*[\w.])?")
_CONNECTORS = frozenset("of the de da di del della du la le von van der den bin al y and &".split())
# Words that open sentences without naming anything; a capital letter there means nothing.
_DISCOURSE = frozenset("""however therefore thus hence also then yes so first second finally
answer because since although though while after before when where what who whom which why
how during in on at from by for with to as if but and or maybe perhaps probably likely let
this that these those there here it its he she they we i you his her their our my your
a an the is was are were some many most one another other such
""".split())
_COPULA = re.compile(r"\s+(is|was|are|were)\s+(?:(?:a|an|the)\s+)?(.+)$", re.IGNORECASE)
_TITLES = frozenset("dr mr mrs ms prof st mt ft sr jr gen gov capt col lt sgt rev sen rep".split())


def _keeps_dot(word: str) -> bool:
    """A dot that does not end the name: initials (`F.`, `U.S.`) or a title (`Dr.`)."""
    return bool(re.fullmatch(r"(?:[A-Z]\.)+", word)) or word[:-1].lower() in _TITLES


def _is_name_word(word: str) -> bool:
    return word[0].isupper() or word[0].isdigit()


def _spans(sentence: str) -> list[tuple[int, int]]:
    """Character spans of capitalised / numeric runs ("Bank of England", "July 1969")."""
    words = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(sentence)]
    spans, i = [], 0
    while i < len(words):
        if not _is_name_word(words[i][2]) or words[i][2].lower() in _DISCOURSE:
            i += 1
            continue
        j = i
        while j + 1 < len(words):
            nxt = words[j + 1][2]
            gap = sentence[words[j][1]:words[j + 1][0]]
            if gap.strip(" ") or (words[j][2].endswith(".") and not _keeps_dot(words[j][2])):
                break  # punctuation between words, or a sentence-final dot, ends the name
            if _is_name_word(nxt):
                j += 1
            elif (nxt.lower() in _CONNECTORS and j + 2 < len(words) and _is_name_word(words[j + 2][2])
                  and not sentence[words[j + 1][1]:words[j + 2][0]].strip(" ")):
                j += 2
            else:
                break
        start, end = words[i][0], words[j][1]
        text = sentence[start:end]
        if text.endswith(".") and not _keeps_dot(text.split()[-1]):
            end -= 1
        spans.append((start, end))
        i = j + 1
    return spans


def heuristic_triples(sentence: str) -> list[list[str]]:
    """Triples from capitalised spans: consecutive names linked by the words between them;
    one name followed by `is/was ...` gives [name, copula, rest]."""
    spans = _spans(sentence)
    names = [sentence[a:b] for a, b in spans]
    if len(names) >= 2:
        triples = []
        for (a1, b1), (a2, b2) in zip(spans, spans[1:]):
            relation = sentence[b1:a2].strip(" ,;:()-\"'").strip() or "and"
            triples.append([sentence[a1:b1], relation, sentence[a2:b2]])
        return triples
    if len(names) == 1:
        match = _COPULA.match(sentence[spans[0][1]:])
        if match:
            tail = match.group(2).strip().rstrip(".!?").strip()
            if tail:
                return [[names[0], match.group(1).lower(), tail]]
    return []


def claims(text: str) -> list[str]:
    """Claim sentences of `text`: one per heuristic triple of each sentence, in order, each at
    least three words (an atomic fact's minimum), deduplicated case-insensitively."""
    body = str(text or "")
    found: dict[str, str] = {}
    for start, end in split_sentences(body):
        for triple in heuristic_triples(body[start:end]):
            claim = " ".join(part.strip() for part in triple if part.strip())
            if len(claim.split()) >= 3:
                found.setdefault(claim.casefold(), claim)
    return list(found.values())


__all__ = ["CLAIMS_VERSION", "claims", "heuristic_triples"]
