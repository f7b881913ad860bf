"""The pieces strict accuracy (strict.py) reads an answer with: tokens that keep punctuation and
capitalisation, the references with strict v3's derived aliases, gold occurrences, correction
cues, negation and the answer's pieces (candidates between separators).

Everything works on `normalize_answer` tokens (so matching is the protocol's: token boundaries,
case folded, articles dropped), with each punctuation mark kept in place as a `zqsep<name>`
token and, beside every token, whether its word was capitalised in the answer as written (the
rule for what may follow a gold, strict.py rule 6, needs it).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from .matching import STOPWORDS, has_content, normalize_answer

SEP = "zqsep"  # a lowercase ASCII word survives normalize_answer, so punctuation keeps its place
_PUNCT = {",": "comma", ";": "semi", "/": "slash", "?": "qmark", "!": "bang", ".": "stop", ":": "colon",
          "\n": "line", "(": "paren", ")": "paren", "[": "paren", "]": "paren", "&": "amp"}
_DASH = re.compile(r"\s[-\u2010-\u2015]+\s|[\u2013-\u2015]")
_PUNCT_RE = re.compile("[" + re.escape("".join(_PUNCT)) + "]")
_DIGIT_MARK = re.compile(r"(?<=\d)[.,](?=\d)")  # "1.5", "29,137": one number, its parts adjacent tokens
_RANGE = re.compile(r"(?<=\d)[\u2010-\u2015](?=\d)")  # v6: "2010–11" is one season, not a dash between pieces
# v6: the stops of an initialism before a lowercase word end no sentence ("Cheltenham Town F.C. is a team");
# before a capital they still may ("U.S.A. Kiki.": two answers)
_INITIALISM = re.compile(r"(?<![A-Za-z])(?:[A-Z]\.){2,}(?=\s+[a-z])")
_WORD_SPLIT = re.compile(r"[\W_]+")
_PARENS = re.compile(r"\s*[(\[][^)\]]*[)\]]\s*")

CORRECTION_CUES = (("actually",), ("wait",), ("sorry",), ("rather",), ("correction",), ("i", "mean"),
                   ("scratch", "that"), ("on", "second", "thought"), ("my", "mistake"), ("make", "that"))
NEGATIONS = frozenset({"not", "never", "no", "neither", "nor", "cannot"})
COPULA = frozenset({"is", "was", "are", "were"})
_COPULA = COPULA
# A copula's complement that makes its subject the answer ("Seoul is the answer", "Seoul is correct").
ANSWER_WORDS = frozenset({"answer", "correct", "right", "true", "it", "one", "mine", "my", "your", "final"})
_WRONG = frozenset({"not", "wrong", "incorrect", "false"})
_NOT_COPULA = frozenset({"isn", "wasn", "aren", "weren"})  # "isn't" normalises to "isn t"
_CLAUSE_WORDS = frozenset({"but", "however", "instead", "or", "although", "though", "whereas"})
_CLAUSE_SEPS = frozenset({"comma", "semi", "colon", "stop", "qmark", "bang", "dash", "line", "paren"})
NEGATION_WINDOW = 3
# Separators between candidates (strict.py rule 5). COORD: words and marks that join candidates
# ("X or Y", "X and Y", "X but Y", "X/Y", "X; Y", "X & Y"): a candidate after one competes
# wherever it stands. SOFT: marks after which a piece may elaborate on the gold before it
# ("Paris, France", "Paris (France)", "Paris. It is the capital."); before the gold, a
# candidate after a soft mark still competes ("Seoul, Tokyo").
COORD_WORDS = frozenset({"or", "nor", "and", "but", "however", "instead", "although", "though", "whereas",
                         "versus", "vs"})
LIST_WORDS = frozenset({"or", "nor"})  # their presence makes every comma a list comma ("X, Y, or Z")
# Separators that offer alternatives: with one of them in the asserted part, any piece with a
# word that is not framing is a candidate, whatever its kind (strict v2's rule: "$1.3 billion or Asia").
ALTERNATIVE_SEPS = frozenset({"slash", "semi", "line"})
COORD_SEPS = frozenset({"slash", "semi", "line", "amp"})
SOFT_SEPS = frozenset({"comma", "stop", "qmark", "bang", "colon", "dash", "paren"})
CONCESSIVE = frozenset({"although", "though", "whereas", "while", "despite"})  # "although some say X": X conceded
REPORTING = frozenset({"say", "says", "said", "claim", "claims", "claimed", "suggest", "suggests", "suggested",
                       "think", "thinks", "believe", "believes", "argue", "argues"})
FIRST_PERSON = frozenset({"i", "we"})
# Prepositions before a place that the following comma pieces may qualify ("based in Doncaster, England").
PLACE_PREPOSITIONS = frozenset({"in", "at", "near", "of", "from"})
PRONOUNS = frozenset({"i", "we", "you", "he", "she", "it", "they", "this", "that", "there"})
HEDGE_WORDS = frozenset({"possibly", "perhaps", "maybe", "probably", "likely", "either", "think", "believe",
                         "guess", "suppose", "sure", "answer"})
# Words that never make a piece a candidate of its own: framing ("the answer is", "I think",
# "I would say"), hedges and affirmations. Every other word can, stopwords included ("Don Was").
FILLER = HEDGE_WORDS | frozenset({
    "i", "it", "its", "is", "was", "be", "am", "are", "could", "would", "might", "may", "so", "that", "this", "s",
    "t", "m", "else", "something", "not", "say", "recall", "remember", "know", "reckon", "definitely", "certainly",
    "surely", "clearly", "obviously", "indeed", "well", "yes", "ok", "okay", "final", "completely", "entirely",
    "totally", "absolutely", "certain", "confident", "100", "percent", "quite", "pretty", "fairly", "d", "ll", "re",
    "ve", "my", "me", "very"})
MONTHS = frozenset({"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                    "november", "december"})
# Capitalised words that may follow a number without making it a name: eras, clock and units.
UNIT_WORDS = frozenset({"ad", "bc", "bce", "ce", "am", "pm", "usd", "eur", "gbp", "km", "kg", "cm", "mm", "mph", "kph",
                        "utc", "gmt", "ft", "lb", "lbs", "oz", "mi"})
NUMBER_WORDS = frozenset({"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                          "eleven", "twelve", "hundred", "thousand", "million", "billion", "trillion"})


def sep(token: str) -> str | None:
    return token[len(SEP):] if token.startswith(SEP) else None


def is_number(token: str) -> bool:
    return token.isdigit() or token in NUMBER_WORDS


@dataclass(frozen=True)
class Tokens:
    words: list[str]  # normalize_answer tokens, punctuation as zqsep<name>
    caps: list[bool]  # the token's word began with a capital letter in the answer as written
    lettered: bool  # the answer mixes cases (capitalisation carries information)


def tokens(answer: str) -> Tokens:
    """normalize_answer tokens of `answer`, with punctuation kept as `zqsep<name>` tokens and the
    capitalisation of each token's word. When per-word normalisation disagrees with the whole
    (a rare Unicode composition across a word boundary), capitalisation is left unknown."""
    words, caps, lettered = _tokens(answer)
    return Tokens(list(words), list(caps), lettered)  # fresh lists: the cached tuples stay as computed


@lru_cache(maxsize=1 << 14)  # a row's golds are tokenised again for every answer and every reading
def _tokens(answer: str) -> tuple[tuple[str, ...], tuple[bool, ...], bool]:
    text = _DIGIT_MARK.sub(" ", _RANGE.sub(" ", _INITIALISM.sub(lambda m: m.group(0).replace(".", " "), answer)))
    text = _DASH.sub(f" {SEP}dash ", text)
    text = _PUNCT_RE.sub(lambda m: f" {SEP}{_PUNCT[m.group(0)]} ", text)
    words = normalize_answer(text).split()
    caps: list[bool] = []
    for piece in _WORD_SPLIT.split(text):
        if piece:
            caps += [piece[:1].isupper()] * len(normalize_answer(piece).split())
    letters = [c for c in answer if c.isalpha()]
    lettered = any(c.isupper() for c in letters) and any(c.islower() for c in letters)
    if len(caps) != len(words):
        caps, lettered = [False] * len(words), False
    return tuple(words), tuple(caps), lettered


def words_of(tokens_: Sequence[str], start: int, stop: int) -> str:
    return " ".join(t for t in tokens_[start:stop] if sep(t) is None)


def aliases(golds: Sequence[str]) -> tuple[str, ...]:
    """The references plus strict v3's derived aliases (strict.py, "Aliases"): a gold's text
    without its parenthesised parts ("farmer (occupation)" -> "farmer"); each item of a gold that
    lists several answers with two or more commas or a semicolon ("Steve Jobs, Steve Wozniak,
    Ronald Wayne" -> each name; items that are only numbers are not: dates); and the head of a
    gold with one comma and a qualifier without digits ("Bolzano, Italy" -> "Bolzano")."""
    out: dict[str, None] = {}
    for gold in golds:
        if not isinstance(gold, str) or not gold.strip():
            continue
        out.setdefault(gold, None)
        bare = _PARENS.sub(" ", gold).strip()
        if bare and bare != gold.strip() and normalize_answer(bare):
            out.setdefault(bare, None)
        plain = _DIGIT_MARK.sub("", bare)
        items = [i.strip() for i in re.split(r";|,", plain)] if (";" in plain or plain.count(",") >= 2) else []
        if items:
            items = [re.sub(r"^(and|or)\s+", "", i, flags=re.IGNORECASE) for i in items]
        elif plain.count(",") == 1:
            head, tail = (part.strip() for part in plain.split(","))
            if head and tail and not any(c.isdigit() for c in tail) and has_content(normalize_answer(head)):
                items = [head]
        for item in items:
            norm = normalize_answer(item)
            if norm and has_content(norm) and not all(is_number(t) for t in norm.split()):
                out.setdefault(item, None)
    return tuple(out)


def _find(seq: list[str], want: list[str]) -> list[int]:
    return [i for i in range(len(seq) - len(want) + 1) if want and seq[i:i + len(want)] == want]


def gold_spans(tokens_: list[str], golds: Sequence[str], *, every: bool = False) -> list[tuple[int, int]]:
    """(first, last) token index of every gold occurrence: its words in order, whatever soft
    punctuation lies between them (a list separator only where the gold has one itself), and
    its exact tokens with its own punctuation. Occurrences of golds made only of function words
    ("OR", "Not", "NO": PopQA aliases) are dropped when a gold with a content word occurs."""
    content = [i for i, t in enumerate(tokens_) if sep(t) is None]
    seq = [tokens_[i] for i in content]
    spans = set()
    for gold in golds:
        if not isinstance(gold, str):
            continue
        want, exact = normalize_answer(gold).split(), tokens(gold).words
        own = {sep(t) for t in exact}
        for i in _find(seq, want):
            first, last = content[i], content[i + len(want) - 1]
            if not any(sep(t) in COORD_SEPS and sep(t) not in own for t in tokens_[first:last + 1]):
                spans.add((first, last))
        spans |= {(i, i + len(exact) - 1) for i in _find(tokens_, exact)}
    # Keep the widest occurrence: a gold's words inside its own exact occurrence are the same one.
    spans = {s for s in spans if not any(o != s and o[0] <= s[0] and s[1] <= o[1] for o in spans)}
    meaningful = {s for s in spans if named(words_of(tokens_, s[0], s[1] + 1))}
    return sorted(spans if every else (meaningful or spans))


def at_edge(tokens_: list[str], span: tuple[int, int]) -> bool:
    """The occurrence ends the answer (only punctuation after it) or stands in brackets: an alias
    of function words there is an abbreviation ("Norway, also known as NOR", "Canada (CAN)"),
    not a separator."""
    if all(sep(t) is not None for t in tokens_[span[1] + 1:]):
        return True
    return (span[0] > 0 and span[1] + 1 < len(tokens_) and sep(tokens_[span[0] - 1]) == "paren"
            and sep(tokens_[span[1] + 1]) == "paren")


def named(text: str) -> bool:
    """A gold occurrence that names something: a word that is not a function word ("8", "D.J.",
    "Paris"; not "OR", "NO", "Not", "US", which PopQA lists as aliases)."""
    return any(t not in STOPWORDS for t in text.split())


def cue_end(tokens_: list[str], i: int, protected: set[int]) -> int | None:
    """Index after a correction cue starting at i, or None."""
    if i in protected:
        return None
    if tokens_[i] == "no":
        before = i == 0 or sep(tokens_[i - 1]) is not None
        after = i + 1 == len(tokens_) or sep(tokens_[i + 1]) is not None
        bracketed = 0 < i < len(tokens_) - 1 and sep(tokens_[i - 1]) == sep(tokens_[i + 1]) == "paren"
        return i + 1 if before and after and not bracketed else None  # "Norway (NO)": an abbreviation
    for cue in CORRECTION_CUES:
        end = i + len(cue)
        if tuple(tokens_[i:end]) == cue and not protected.intersection(range(i, end)):
            return end
    return None


def _clause_words(tokens_: list[str], indexes: range) -> list[str]:
    out = []
    for i in indexes:
        if sep(tokens_[i]) in _CLAUSE_SEPS or tokens_[i] in _CLAUSE_WORDS:
            break
        if sep(tokens_[i]) is None:
            out.append(tokens_[i])
    return out


def _is_negation(words: list[str], k: int) -> bool:
    """words[k] negates: a negation word, or the "t" of an "n't" contraction (words run
    backwards here, so the contraction's stem is words[k + 1])."""
    return words[k] in NEGATIONS or (words[k] == "t" and k + 1 < len(words) and words[k + 1].endswith("n"))


def negated(tokens_: list[str], span: tuple[int, int], start: int, stop: int) -> bool:
    """A negation among the NEGATION_WINDOW words before the span in its clause, or a copula
    with "not"/"wrong"/"incorrect"/"false" (or an "n't" copula) right after it."""
    before = _clause_words(tokens_, range(span[0] - 1, start - 1, -1))  # nearest first
    if any(_is_negation(before, k) for k in range(min(NEGATION_WINDOW, len(before)))):
        return True
    after = _clause_words(tokens_, range(span[1] + 1, stop))[:2]
    return len(after) == 2 and ((after[0] in _COPULA and after[1] in _WRONG)
                                or (after[0] in _NOT_COPULA and after[1] == "t"))


@dataclass(frozen=True)
class Piece:
    start: int
    stop: int
    joint: str  # how it joins the piece before it: "start" | "coord" | "soft"
    via: str = ""  # the joining word or mark ("and", "although", "comma", ...)


def pieces(tokens_: list[str], start: int, stop: int, protected: set[int], listing_stop: int | None = None) -> list[Piece]:
    """The candidates' places in tokens_[start:stop] (strict.py rule 5): cut at every separator
    outside a gold occurrence; commas are list (coord) separators when the part has an
    "or"/"nor" (before `listing_stop`, where given), else soft (a list of commas alone is caught
    by the one-apposition rule)."""
    free = [i for i in range(start, stop) if i not in protected]
    listing = any(tokens_[i] in LIST_WORDS for i in free if listing_stop is None or i < listing_stop)
    out: list[Piece] = []
    begin, joint, via = start, "start", ""
    for i in free:
        kind = sep(tokens_[i])
        if tokens_[i] in COORD_WORDS or kind in COORD_SEPS or (kind == "comma" and listing):
            cut = "coord"
        elif kind in SOFT_SEPS:
            cut = "soft"
        else:
            continue
        if i > begin:
            out.append(Piece(begin, i, joint, via))
            joint, via = cut, kind or tokens_[i]
        elif cut == "coord" or joint == "start" and begin == start:
            joint, via = cut, kind or tokens_[i]  # "X, and Y": the strongest joint between two pieces counts
        begin = i + 1
    if stop > begin:
        out.append(Piece(begin, stop, joint, via))
    return out


def alternatives(tokens_: list[str], start: int, stop: int, protected: set[int]) -> bool:
    """The asserted part offers alternatives: an "or"/"nor", "/", ";" or a new line outside golds."""
    return any(i not in protected and (tokens_[i] in LIST_WORDS or sep(tokens_[i]) in ALTERNATIVE_SEPS)
               for i in range(start, stop))


def inside_gold(text: str, golds: Sequence[str]) -> bool:
    """The protocol's reverse direction: the text occurs inside a gold and has a content word."""
    padded = f" {text} "
    return bool(text) and has_content(text) and any(padded in f" {normalize_answer(g)} " for g in golds
                                                    if isinstance(g, str) and normalize_answer(g))


def content_runs(tokens_: list[str], piece: Piece, skip: set[int]) -> list[list[int]]:
    """Runs of adjacent non-filler words in a piece (indexes), outside `skip` (gold tokens)."""
    runs: list[list[int]] = []
    current: list[int] = []
    for i in range(piece.start, piece.stop):
        word = tokens_[i]
        if i in skip or sep(word) is not None or word in FILLER:
            if current:
                runs.append(current)
            current = []
        else:
            current.append(i)
    if current:
        runs.append(current)
    return runs


def _name_word(tk: "Tokens", i: int) -> bool:
    """A capitalised function word inside a sentence, or opening one before another capitalised
    word, is part of a name ("Down Twisted", "All at Once"); "In 1945" opens a clause."""
    if not tk.caps[i]:
        return False
    if not sentence_start(tk.words, i):
        return True
    after = i + 1
    return after < len(tk.words) and tk.caps[after] and tk.words[after] not in STOPWORDS


def function_word(word: str) -> bool:
    """A stopword or copula: what opens a modifier or a predicate after a noun ("of", "is", "that")."""
    return word in STOPWORDS or word in COPULA


def subject_word(word: str) -> bool:
    """A word that can end a copula's subject: not framing ("the answer is"), not punctuation."""
    return sep(word) is None and word not in FILLER and word not in STOPWORDS


def bare_name(tk: "Tokens", runs: list[list[int]]) -> bool:
    """One run of capitalised words (function words aside): a place's qualifier ("North Yorkshire")."""
    return len(runs) == 1 and all(tk.caps[i] for i in runs[0] if tk.words[i] not in STOPWORDS)


def sentence_break(words: list[str], start: int, stop: int) -> bool:
    """A sentence ends between the two token indexes (a full stop, question or exclamation mark, new line)."""
    return any(sep(w) in ("stop", "qmark", "bang", "line") for w in words[start:stop])


def sentence_start(words: list[str], i: int) -> bool:
    """Token i opens the answer or a sentence (capitalised by convention, not as a name)."""
    return i == 0 or sep(words[i - 1]) in ("stop", "qmark", "bang", "line", "colon")


# Lowercase words that may join the capitalised words of one name ("University of Pennsylvania",
# "Leonardo da Vinci", "Institute for Advanced Study").
NAME_JOINERS = frozenset({"of", "de", "da", "di", "du", "von", "van", "der", "den", "la", "le", "del", "y", "at",
                          "for", "upon", "on", "and"})


def conjunct(tk: "Tokens", run: list[int]) -> list[int]:
    """The words of a run after its last function word ("composed of extracellular matrix" ->
    "extracellular matrix"): what a coordinating word right after the run joins; the run itself
    when it names something (`bare`)."""
    if bare(tk, run):
        return run
    last = max(k for k, i in enumerate(run) if tk.words[i] in STOPWORDS and not _name_word(tk, i))
    return run[last + 1:] or run


def bare(tk: "Tokens", run: list[int]) -> bool:
    """A run that names something: no function word among its words, or only function words
    ("Don Was"), or capitalised words joined by NAME_JOINERS ("University of Pennsylvania").
    A run with any other function word is a clause ("capital of France", "in 1945")."""
    words = tk.words
    # a capitalised function word inside a sentence is part of a name ("Down Twisted", "All at Once")
    stops = [k for k, i in enumerate(run) if words[i] in STOPWORDS and not _name_word(tk, i)]
    if not stops or len(stops) == len(run):
        return True
    return all(words[run[k]] in NAME_JOINERS and 0 < k < len(run) - 1 and tk.caps[run[k - 1]] and tk.caps[run[k + 1]]
               and not tk.caps[run[k]] for k in stops)


__all__ = ["COORD_WORDS", "CORRECTION_CUES", "FILLER", "NAME_JOINERS", "HEDGE_WORDS", "NEGATIONS", "Piece", "SEP", "Tokens",
           "aliases", "alternatives", "at_edge", "bare", "named", "content_runs", "cue_end", "gold_spans", "inside_gold", "is_number", "negated",
           "pieces", "sep", "tokens", "words_of"]
