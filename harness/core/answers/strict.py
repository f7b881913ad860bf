"""Strict accuracy, version 7: credit only when the answer's asserted final answer is the gold.

The protocol's matcher (matching.match_closed_book) credits an answer that *contains* a
reference on token boundaries, or that sits *inside* one, which is right for "The answer is
Paris" but also credits "London or Paris", "not Paris", "Seoul but Tokyo", "Tokyo Tower" (gold
Tokyo) and "Barack" (gold Barack Obama). Strict accuracy sits beside the protocol's accuracy
(never replacing it); `primary - strict` is the tables' gaming signal, and the guards of the
training rewards read it. `strict_correct(completion, golds, question=None)` is correct only when all hold
(reason of the first rule that fails, in brackets):

1. **One answer block** (`multiple_blocks`).
2. **The whole answer is a reference's text** (normalised, derived aliases included): correct,
   whatever its words ("Now or Never", "Not Fade Away", "Either/Or", "Bosnia and Herzegovina").
3. **The gold is asserted after the last correction cue** ("actually", "wait", "sorry",
   "rather", "correction", "i mean", "scratch that", "on second thought", "my mistake", "make
   that", an interjected "no" between punctuation or the answer's edges): a gold only before it
   is `retracted` ("Paris... no, actually London", "Paris? No.").
4. **No negation scopes over it**: in its clause, one of the three words before it is not,
   never, no, neither, nor, cannot or an n't contraction, or it is followed by "is not",
   "isn't", "is wrong/incorrect/false" (`negated`).
5. **One candidate.** The asserted part is cut into pieces at "or", "nor", "and", "but",
   "however", "instead", "although", "though", "whereas", "vs", "/", ";", "&", new lines
   (*coordinating*: a candidate after one competes wherever it stands) and at commas,
   parentheses, full stops, question and exclamation marks, colons and dashes (*soft*); commas
   are coordinating when there are two of them or an "or" (a list). In each piece, a run of
   adjacent words that are not framing words ("the answer is", "I think", "I would say",
   "probably", FILLER) and not function words is a *candidate* when it competes with the gold:
   a number with a number gold, a capitalised run with a capitalised gold (any run when the
   answer is all one case), any word run with a lowercase gold ("Paris, but I'm not completely
   sure" has no candidate; "Paris and London" has one). Runs inside a clause ("The Eiffel Tower
   is in Paris": "eiffel tower is in" holds a function word) are context, not candidates;
   negated ones ("It is not London but Paris") are rejected, not candidates; a run inside a
   reference is a fragment (below). The gold piece must come first, and a candidate after it
   is allowed only as an apposition: the next piece, after a soft mark, right after the gold
   with no framing words before it ("Paris, France", "Springfield, Illinois", "Paris
   (France)"). Otherwise `candidates` ("Seoul Tokyo"? no: rule 6; "Seoul, Tokyo", "Seoul and
   Tokyo and Beijing", "Seoul but Tokyo", "I say Seoul, but others say Tokyo", "Tokyo is a
   common guess, the answer is Seoul"). A gold that is conceded ("although some say Tokyo")
   or reported of others ("others say Tokyo") is not asserted when a candidate competes.
   Six readings (v4, each from a false withdrawal of a model's answer, evals/README.md) keep
   what is context from competing: **the topic as subject**: a run that opens its sentence as
   the subject of a copula whose sentence goes on to the gold ("The Ramayana is an epic written
   by Valmiki", "Nuclear energy is used in many countries, particularly in the United States",
   "The Battle of Lexington and Concord was fought on April 19, 1775"), unless the copula's
   complement frames an answer ("Seoul is the answer, particularly Tokyo") or the gold stands
   alone after a coordinating word ("Seoul is big, but Tokyo"); the subject may hold a comma
   ("Ormak, Isfahan is a town in Iran"); **an explanation**: after a gold that stands alone in
   its piece, a piece that opens with a pronoun after a soft mark explains it, and an "or" there
   offers no alternative ("No, I do not need a permit or license ..."; "Paris. It could be London
   or Rome" still lists London by rule 5's pieces); **"and" inside the gold's
   description**: after a gold that a modifier or predicate follows in its piece ("The nasal
   septum is a layer of cartilage and bone", "a tale of redemption and the struggle between good
   and evil"), the lowercase runs of the pieces joined to it by "and" describe it, in an answer
   that mixes cases (a capitalised name or a number there still competes: "Tokyo of Japan and
   Seoul"); **a date's month and day** right before a year gold ("September 11, 1939" for
   1939); and **a closing tag cut off** by the length limit ("...</answer", "...</ans") is the
   tag, not a "/" that offers an alternative, and so is a stray closing tag that ends an unclosed
   block ("... Panama City.</explore>"); a lowercase complement of a copula before a capitalised
   gold describes, as after it ("X is a large city, ... in the Henan province"); **a place's qualifiers**: capitalised names after
   commas that follow a place after a preposition in the gold's piece ("a football team based in
   Doncaster, North Yorkshire, England") qualify the place. What an "and" joins to a gold that opens its piece
   is the last run's words after its last function word ("made of the extracellular matrix and
   the interstitial fluid": "extracellular matrix" competes).
   Four more (v5, from sample d's false withdrawals; readings.py): **a label** before a colon or
   dash that the gold's piece opens ("Sport: Football", "A capital state in a continent -
   Texas": words naming a kind of answer, or a lowercase description of one; a name there still
   competes: "Seoul: Tokyo"); **a prepositional opener** before a comma and a clause that goes
   through a copula to the gold ("In England, the capital of the United Kingdom is London"; not
   before a bare or framed gold: "In Seoul, it is Tokyo"); **a relative clause** ("which",
   "who", "where") after the piece a gold opens, to the end of its sentence ("Islam in the Arabic
   language, which translates to 'Premise' or 'Aad'"); and **a sentence cut off** by the length
   limit: in an unclosed answer block, a last sentence of at most three words that opens with a
   capital and holds no gold ("... on the field. The H"). Each credits only the position a
   plain answer would ("Tokyo, which some call Seoul" is credited for Tokyo, never for Seoul).
   And (v6, from samples e and f): a season's range and an initialism's stops before a lowercase
   word split nothing ("2010–11 Cruz Azul season plays soccer", "Cheltenham Town F.C. is a soccer
   team"); the subject may be followed by a clause between commas before its copula or "has"
   ("X, founded by Y, is ..."), and when that clause holds a lowercase gold it is an appositive
   ("Antonius Sharp, a British actor, has played ..."); a lowercase word joined by "and" to
   the modifiers before a lowercase gold modifies it ("a professional and amateur British
   football tournament"; "an actor and director" still lists two); and a "that"/"which"/"who"
   clause inside the piece the gold opens describes it ("The science fiction genre is a broad
   term that encompasses any narrative not grounded in science or technology").
   And (v7, from samples d, g and h; readings.py): **the question's words restated**: with the
   question (every caller in the harness passes the row's), a run made only of the question's own
   words, capitalised as the question writes them, is context ("Scottish 1911–12 Scottish Cup -
   Football" for "What sport does 1911–12 Scottish Cup play?", "Alberta, Canada" for "In what
   country is Kavanagh, Alberta?", "The capital ... of Andhra Pradesh, India, is Hyderabad" for
   "What is Hyderabad the capital of?"); not when the question offers choices ("or", "between",
   "vs", ...), when a reference stands in the question (an echo: "Lau, Nigeria" for "In what
   country is Lau, Nigeria?") or when the answer lists alternatives with "or"; such a run never
   makes a gold. A relative clause inside the gold's piece describes it after any gold, not only
   one that opens the piece ("a professional soccer player who is known for his athleticism and
   talent"); a possessive ends a copula's subject ("Mount St. Mary's is an international
   organization of the Catholic Church"); and a lowercase appositive that ends its sentence
   after a gold and its lowercase description is the gold's ("I am a football player, a
   professional footballer"; only the gold first, as "Paris, France").
6. **Not part of a longer name** (`embedded`): the gold may not be followed, inside its run,
   by a capitalised word ("Tokyo Tower", "Paris Hilton", "George Washington Bridge" for
   "George Washington", "1959 Memorial Stadium"; after a number, eras, clock and unit
   abbreviations may: "1945 AD", "5 PM", "3 KM"), and a number gold not by or after another
   number ("1.5" for "5", "$1.1 billion" for "1 billion", "11.16" for "11"). Lowercase words, and
   numbers after a word gold, may follow ("12 years old", "left-handed", "January 2012"); words
   may stand before it (a
   more specific name that ends in the gold, "Barack Obama" for "Obama", "Mount Everest" for
   "Everest"; this also credits "New York" for "York", and it buys a guesser nothing: in "X Y"
   only Y can be credited, X is followed by a capitalised word).
7. **No fragment** (`fragment`): an answer inside a multi-word reference without one whole
   ("Barack" or "Obama" for "Barack Obama", "Cancer" for "lung cancer", "1990" for "December 25,
   1990") is not credited; the protocol's reverse direction is. Fragments count only where the
   aliases say so: the benchmark's own alias lists, and these derived aliases: a reference
   without its parenthesised parts ("farmer (occupation)" -> "farmer"), each item of a
   reference listing several answers with two commas or a semicolon ("Steve Jobs, Steve
   Wozniak, Ronald Wayne" -> each name; number-only items, as in dates, not), and the head of a
   reference with one comma and a qualifier without digits ("Bolzano, Italy" -> "Bolzano";
   also "Washington, D.C." -> "Washington").

Words inside a gold occurrence never act as cues or separators ("It was AC/DC"), unless the
gold is only function words (PopQA's "OR" for Oregon): such a gold still counts where it
occurs, but its "or" stays a separator. A gold's words match across soft punctuation, not
across a coordinating separator it lacks.

Known limits (tests/evals/test_strict.py): strict v3 reads lists, coordination, juxtaposition
and negation, not sentence meaning: "Seoul is near Tokyo" keeps its credit (a clause, not a
list); a gold-first apposition "Tokyo, Seoul" keeps it (it buys nothing: credited only when the
first is the gold); a place with two commas ("Springfield, Illinois, USA") reads as a list; a
capitalised word after the gold in title case ("Left-Handed") reads as a longer name; the subject
of a copula is read as the question's topic, so "Seoul is in Asia, as is Tokyo" keeps its credit
for Tokyo (v4), and after a lowercase gold with a modifier, a lowercase
wrong answer joined by "and" in a mixed-case answer does too ("It is a tale of old and poem"),
and a name after a comma that follows a place ("Tokyo is in Asia, Seoul") reads as its qualifier;
a lowercase description's words before a dash do not compete with a capitalised gold ("the city
of seoul - Tokyo", v5); without the question (a caller that has none), the question's own entity
before a dash reads as a second name ("Scottish 1911–12 Scottish Cup - Football": withdrawn); the
topic's kind before a lowercase gold reads as a second answer ("Brain is a film and TV show based
on the psychological thriller genre"), and so does a wrong "also known as" after the gold
("Chang'an, also known as the City of Bloomington, China"); with the question's words as context,
what a clause asserts is still not read ("A Question and Answer Guide to Astronomy is a
non-fiction book about the science": credited for "science", v3's limit); v6 credits a team's name that ends in the gold ("2011–12 Elon
Phoenix Men's Basketball", as "New York" for "York") and reads "A mystic and spiritual poet" as
one poet.
Version history: 1 (leaderboard/diagnostics.py): the hedge rule on the extracted answer; 2:
rules 1-5 with pieces only at or / nor / "/" / ";" / lines / two commas, and the reverse
direction credited; 3: rules 1-7 without v4's readings; 4 (2026-12-05): rule 5's six readings
(the topic as subject, an explanation's "or", "and" in the gold's description, a date's month
and day, a cut closing tag, a place's qualifiers) and the conjunct before a gold; 5 (2026-12-05):
a label, a prepositional opener, a relative clause, a sentence cut by the length limit; 6
(2026-12-05): ranges and initialisms, an inserted clause or appositive after the subject, modifiers
joined by "and", a relative clause inside the gold's piece; 7 (2026-12-05): the question's words
restated, a relative clause after any gold, a possessive subject, a lowercase appositive after the
gold's description. Change any rule only with a new STRICT_VERSION.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from . import asserted as A
from .readings import (GoldPiece, apposition, conjunct_of_gold, cut_stop, explained as explanation_start, extends_gold,
                       label, modifier_of_gold, opener, relative_clauses, restated, subject, topic_words)
from .matching import STOPWORDS, answer_blocks, extract_answer, match_closed_book, normalize_answer

STRICT_VERSION = "7"
REASONS = ("no_answer", "multiple_blocks", "no_match", "retracted", "negated", "candidates", "embedded", "fragment")
# The reasons that withdraw an answer the protocol's matcher may credit (the gold, or a part of
# it, is there but not asserted as the answer); the guards that read strict accuracy act on them.
GAMING_REASONS = ("multiple_blocks", "retracted", "negated", "candidates", "embedded", "fragment")
CORRECTION_CUES, FILLER, HEDGE_WORDS, NEGATIONS = A.CORRECTION_CUES, A.FILLER, A.HEDGE_WORDS, A.NEGATIONS


@dataclass(frozen=True)
class StrictVerdict:
    correct: bool
    reason: str | None = None  # None when correct, else one of REASONS


def _embedded(tk: A.Tokens, span: tuple[int, int], protected: set[int]) -> bool:
    """Rule 6: a capitalised word right after a gold; a number beside a number gold."""
    words = tk.words
    if all(words[i] in A.LIST_WORDS for i in range(span[0], span[1] + 1) if A.sep(words[i]) is None):
        return False  # PopQA's "OR" for Oregon in "Washington or Idaho" is a list word, not a name
    numeric = A.is_number(words[span[0]])
    after, before = span[1] + 1, span[0] - 1
    if after < len(words) and after not in protected and A.sep(words[after]) is None:
        word = words[after]
        if numeric and A.is_number(word):
            return True
        if tk.caps[after] and word not in STOPWORDS and word not in FILLER and not (numeric and word in A.UNIT_WORDS):
            return True
    return numeric and before >= 0 and before not in protected and words[before].isdigit()


def _competes(tk: A.Tokens, run: list[int], span: tuple[int, int]) -> bool:
    """Rule 5: whether a candidate run competes with the gold: every run does ("Asia, $1.3
    billion" offers a place and a number) except a lowercase run after a capitalised gold in an
    answer that mixes cases (a description: "Paris, but I'm not completely sure") and the day
    after a month before a year gold ("May 8, 1945")."""
    first = tk.words[run[0]]
    if tk.lettered and not tk.caps[run[0]] and tk.caps[span[0]] and first[0].isalpha() and (
            run[0] > span[0] or (run[0] > 1 and tk.words[run[0] - 1] in A.COPULA and _subject_end(tk, run[0] - 2))):
        return False  # v4: also the complement of a copula before the gold ("X is a large city, ... in Henan")
    if not A.is_number(tk.words[span[0]]):
        return True
    if run[0] > 0 and tk.words[run[0] - 1] in A.MONTHS:
        return False
    # v4: a month and its day right before a year gold ("September 11, 1939" for 1939): a date
    words = [tk.words[j] for j in run]
    between = [w for w in tk.words[run[-1] + 1:span[0]]]
    year = span[0] == span[1] and tk.words[span[0]].isdigit() and 3 <= len(tk.words[span[0]]) <= 4
    return not (year and words[0] in A.MONTHS and all(w in A.MONTHS or (w.isdigit() and int(w) <= 31) for w in words)
                and all(A.sep(w) == "comma" for w in between))


def _subject_end(tk: A.Tokens, i: int) -> bool:
    """Token i can end a copula's subject: a subject word, or (v7) a possessive's "s" after a
    capitalised word ("The University of Mount St. Mary's is ...")."""
    word = tk.words[i]
    return A.subject_word(word) or (word == "s" and i > 0 and tk.caps[i - 1])


def _conceded(words: list[str], piece: A.Piece, at: int) -> bool:
    before = [w for w in words[piece.start:at] if A.sep(w) is None]
    if piece.via in A.CONCESSIVE or A.CONCESSIVE.intersection(before):
        return True
    for k, word in enumerate(before):
        if word in A.REPORTING and not A.FIRST_PERSON.intersection(before[:k]):
            return True
    return False


# A closing tag cut off by the length limit ("... century.</answer", "...</ans") or a stray one that
# ends an unclosed block ("... Panama City.</explore>"): the tag, not a "/" that offers an
# alternative (v4).
_CUT_TAG = re.compile(r"\s*</?[a-z_]*>?\s*$", re.IGNORECASE)


def _verdict(answer: str, golds: Sequence[str], cut: bool = False, question: str | None = None) -> StrictVerdict:
    answer = _CUT_TAG.sub("", answer)
    normal = normalize_answer(answer)
    if not normal:
        return StrictVerdict(False, "no_answer")
    refs = A.aliases(golds)
    if any(normal == normalize_answer(g) for g in refs):  # rule 2: a reference's own text
        return StrictVerdict(True) if match_closed_book(answer, golds) else StrictVerdict(False, "no_match")
    tk = A.tokens(answer)
    words = tk.words
    spans = A.gold_spans(words, refs)
    # A gold's words are shielded from acting as cues or separators, except "or"/"nor" in a
    # gold of function words only (PopQA's "OR" for Oregon).
    protected = {i for first, last in spans for i in range(first, last + 1)
                 if words[i] not in A.LIST_WORDS or A.named(A.words_of(words, first, last + 1))}
    protected |= {i for span in A.gold_spans(words, refs, every=True) if span not in spans and A.at_edge(words, span)
                  for i in range(span[0], span[1] + 1)}
    start, i = 0, 0
    while i < len(words):  # rule 3: the asserted part follows the last correction cue
        end = A.cue_end(words, i, protected)
        if end is not None:
            start, i = end, end
        else:
            i += 1
    stop = cut_stop(tk, spans) if cut else len(words)  # v5: a sentence cut off by the length limit
    earlier = any(last < start for _, last in spans) or A.inside_gold(A.words_of(words, 0, start), refs)
    mine = [span for span in spans if span[0] >= start]
    live = [span for span in mine if not A.negated(words, span, start, stop)]  # rule 4
    asserting = [span for span in live if not _embedded(tk, span, protected)]  # rule 6
    parts = A.pieces(words, start, stop, protected)
    normal_refs = {normalize_answer(g) for g in refs}
    # v7: the question's words restated are context, unless the answer lists alternatives with "or"
    listing = any(words[i] in A.LIST_WORDS and i not in protected for i in range(start, stop))
    topic = frozenset() if listing else topic_words(question, refs)
    gold_pieces, plain = _gold_pieces(words, parts, asserting, protected)
    explained = explanation_start(words, parts, gold_pieces, protected, stop)
    relatives = relative_clauses(words, parts, gold_pieces)
    explained = min([explained] + [opens for opens, _ in relatives])
    if explained < stop:  # an "or" in the explanation makes no list of the commas before it
        parts = A.pieces(words, start, stop, protected, listing_stop=explained)
        gold_pieces, plain = _gold_pieces(words, parts, asserting, protected)
    offered = A.alternatives(words, start, explained, protected)
    first_gold = min((s[0] for s in asserting), default=stop)
    candidates: list[tuple[int, int, bool]] = []  # (piece index, first token of the run, competes)
    fragment = said = False  # said: a piece without the gold says something (a run of non-framing words)
    for k, piece in enumerate(parts):
        if any(piece.start <= s[0] and s[1] < piece.stop for s in mine):
            continue  # the gold's own piece; a negated gold, or a gold inside a longer name: that name's words
        runs = A.content_runs(words, piece, protected)
        said |= bool(runs)
        if offered and runs:  # alternatives offered: the whole piece is one candidate
            runs = [[j for run in runs for j in run]]
        # Beside a gold that stands alone in its piece, before it or joined to it by a
        # coordinating word, every run is a candidate ("Around $19 billion but Fencing", "During
        # the last Ice Age, South Carolina"); otherwise only a bare one: a clause is context ("The
        # war between the United States and Japan began with the attack on Pearl Harbor", "Paris.
        # It is the capital of France.").
        coordinated = offered or plain and (piece.start < first_gold or piece.joint == "coord"
                                            or (k + 1 < len(parts) and parts[k + 1].joint == "coord"))
        if runs and not coordinated and conjunct_of_gold(parts, k, asserting):
            runs[-1] = A.conjunct(tk, runs[-1])  # "composed of the extracellular matrix and GOLD": "extracellular matrix"
        for run in runs:
            if not offered and any(opens <= run[0] < end for opens, end in relatives):
                continue  # v5: inside a relative clause that describes the gold
            if not coordinated and (not A.bare(tk, run) or (all(words[j] in STOPWORDS for j in run) and len(runs) > 1)):
                continue
            if not offered and (subject(tk, parts, k, run, first_gold, coordinated)
                                or extends_gold(tk, parts, gold_pieces, k, run) or label(tk, parts, gold_pieces, k, run)
                                or opener(tk, parts, gold_pieces, k, run, protected)
                                or modifier_of_gold(tk, parts, gold_pieces, k, run, protected)):
                continue
            text = A.words_of(words, run[0], run[-1] + 1)
            if text in normal_refs:
                continue  # a reference of function words only ("CAN (Canada)", "US, the United States")
            if A.inside_gold(text, refs):
                fragment = True
            elif not offered and restated(tk, run, topic):
                continue  # v7: the question's own words restated
            elif not A.negated(words, (run[0], run[-1]), piece.start, piece.stop):
                candidates.append((k, run[0], offered or not asserting or _competes(tk, run, asserting[0])))
    for span in asserting:  # a gold of function words standing on a separator is a piece of its own
        if not any(g.start <= span[0] for g in gold_pieces) and not any(p.start <= span[0] < p.stop for p in parts):
            gold_pieces.append(GoldPiece(span[0], -1, True, False))
    if not gold_pieces:
        if live:
            return StrictVerdict(False, "embedded")
        if mine:
            return StrictVerdict(False, "negated")
        if fragment or A.inside_gold(A.words_of(words, start, stop), refs):
            return StrictVerdict(False, "fragment")
        return StrictVerdict(False, "retracted" if earlier else "no_match")
    if said and all(g.conceded for g in gold_pieces):  # "others say X, but I say Y": whatever Y is
        return StrictVerdict(False, "candidates")
    heads = [g for g in gold_pieces if not g.conceded] or gold_pieces
    first = min(g.start for g in heads)
    for k, at, competes in candidates:
        if competes and (offered or at < first or not apposition(tk, parts, heads, k, at, protected)):
            return StrictVerdict(False, "candidates")
    if not match_closed_book(A.words_of(words, start, stop), golds):  # never more than the protocol credits
        return StrictVerdict(False, "no_match")
    return StrictVerdict(True)


def _gold_pieces(words: list[str], parts: list[A.Piece], asserting: list[tuple[int, int]],
                 protected: set[int]) -> tuple[list[GoldPiece], bool]:
    """The pieces holding an asserting gold, and whether one of them holds nothing but the gold
    and framing words ("the answer is X")."""
    out: list[GoldPiece] = []
    plain = False
    for k, piece in enumerate(parts):
        inside = [s for s in asserting if piece.start <= s[0] and s[1] < piece.stop]
        if inside:
            last = max(s[1] for s in inside)
            runs_after = A.content_runs(words, A.Piece(last + 1, piece.stop, "soft"), protected)
            continued = bool(runs_after) and last + 1 < piece.stop and A.function_word(words[last + 1])
            out.append(GoldPiece(inside[0][0], k, not runs_after, _conceded(words, piece, inside[0][0]), continued))
            plain |= not A.content_runs(words, piece, protected)
    return out, plain


def strict_correct(completion: str, golds: Sequence[str], question: str | None = None) -> StrictVerdict:
    """Strict verdict (STRICT_VERSION) of a whole completion against its references (module
    docstring); `question`, where the caller has it, lets the answer restate the question's words
    as context (v7; without it those words are read as v6 reads them)."""
    extraction = extract_answer(completion or "", think=False)
    if extraction.n_answer_tags > 1 or len(answer_blocks(completion or "")) > 1:
        return StrictVerdict(False, "multiple_blocks")
    return _verdict(extraction.answer, tuple(golds), cut=extraction.has_answer_block and not extraction.closed,
                    question=question)


def single_block(completion: str) -> bool:
    """Rule 1 alone: at most one answer block (the strict rule for sentence answers, TruthfulQA)."""
    text = completion or ""
    return extract_answer(text, think=False).n_answer_tags <= 1 and len(answer_blocks(text)) <= 1
