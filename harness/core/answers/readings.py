"""Rule 5's readings (strict.py): what in an answer is context around the gold, not a second
candidate. Each reading comes from a false withdrawal of a model's answer (evals/README.md,
"Strict accuracy") and keeps a gaming form withdrawn (tests/evals/test_strict.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from . import asserted as A
from .asserted import FILLER
from .matching import STOPWORDS


@dataclass
class GoldPiece:
    start: int  # token index of its first asserting gold occurrence
    piece: int  # index in the pieces list (-1: a gold of function words standing on a separator)
    ends: bool  # nothing but framing words after the gold in its piece
    conceded: bool  # "although some say X", "others say X"
    continued: bool = False  # a modifier or predicate follows the gold in its piece ("tale of redemption", "septum is a layer")


def explained(words: list[str], parts: list[A.Piece], gold_pieces: list[GoldPiece], protected: set[int],
               stop: int) -> int:
    """v4: where an explanation starts: a piece that opens with a pronoun after a soft mark right
    after a gold that stands alone in its piece ("No, I do not need a permit or license ..."). An
    "or" there joins words of the explanation, not answers; an alternative offered there is still
    a candidate by the rules for pieces ("Paris. It could be London or Rome")."""
    for gold in gold_pieces:
        k = gold.piece + 1
        if gold.piece >= 0 and gold.ends and not gold.conceded and k < len(parts) and parts[k].via in A.SOFT_SEPS \
                and not A.content_runs(words, parts[gold.piece], protected) and words[parts[k].start] in A.PRONOUNS:
            return parts[k].start
    return stop


def conjunct_of_gold(parts: list[A.Piece], k: int, asserting: list[tuple[int, int]]) -> bool:
    """v4: the next piece opens with the gold after a coordinating word: piece k ends with its conjunct."""
    return k + 1 < len(parts) and parts[k + 1].joint == "coord" and any(s[0] == parts[k + 1].start for s in asserting)


def subject(tk: A.Tokens, parts: list[A.Piece], k: int, run: list[int], gold_at: int, coordinated: bool) -> bool:
    """v4: the run opens its sentence and is the subject of a copula whose sentence goes on to the
    gold ("The Ramayana is a classic Hindu epic written by ... Valmiki", "Nuclear energy is used in
    many countries, particularly in the United States"), also as the first of two subjects joined
    by "and" ("The Battle of Lexington and Concord was fought on April 19, 1775"): the question's
    topic restated, not an answer. Not when the copula's complement frames an answer ("Seoul is
    the answer, particularly Tokyo") or the gold stands alone in its piece after a coordinating
    word ("Seoul is big, but Tokyo")."""
    words = tk.words
    if coordinated or not A.sentence_start(words, run[0]):
        return False
    verb = run[-1] + 1
    while verb < parts[k].stop and tk.caps[verb] and words[verb] in FILLER and words[verb] not in A.COPULA:
        verb += 1  # v6: a capitalised framing word inside the subject's name ("The 2009 Ukrainian Cup Final is")
    inserted = _inserted_verb(tk, parts, k, run, gold_at)
    if inserted is not None:  # v6: "X, founded by Y, is ...", "X, a British actor, has played ..."
        if inserted < 0:
            return True
        verb = inserted
    elif verb >= parts[k].stop:  # "X and Y was ...": the verb after the second subject's capitalised run
        if k + 1 >= len(parts) or parts[k + 1].via not in ("and", "comma"):
            return False
        verb = parts[k + 1].start
        while verb < parts[k + 1].stop and tk.caps[verb] and words[verb] not in A.COPULA:
            verb += 1
        if verb == parts[k + 1].start:
            return False
    if verb >= len(words) or words[verb] not in A.COPULA or verb > gold_at:
        return False
    complement = next((w for w in words[verb + 1:gold_at] if A.sep(w) is None), "")
    return complement not in A.ANSWER_WORDS and not A.sentence_break(words, verb, gold_at)


def modifier_of_gold(tk: A.Tokens, parts: list[A.Piece], gold_pieces: list[GoldPiece], k: int, run: list[int],
                     protected: set[int]) -> bool:
    """v6: one lowercase word that ends its piece, joined by "and" to a piece in which a
    lowercase gold follows one or more modifiers with no function word between ("a professional and amateur
    British football tournament", "a mystic and spiritual female poet"): both words modify the
    gold. A gold that opens the next piece is still a second answer ("an actor and director"),
    and only the later position is credited ("an actor and famous director": director, never
    actor)."""
    words = tk.words
    if len(run) != 1 or run[0] + 1 != parts[k].stop or tk.caps[run[0]] or not tk.lettered \
            or not words[run[0]].isalpha():
        return False
    if k + 1 >= len(parts) or parts[k + 1].via != "and":
        return False
    gold = next((g for g in gold_pieces if g.piece == k + 1 and not g.conceded), None)
    if gold is None or gold.start == parts[k + 1].start or tk.caps[gold.start]:
        return False  # a name there is a second answer
    return all(A.sep(words[i]) is None and words[i] not in STOPWORDS and i not in protected
               for i in range(parts[k + 1].start, gold.start))


AUXILIARIES = frozenset({"has", "had", "have"})  # v6: what may open a predicate after an inserted clause


def _inserted_verb(tk: A.Tokens, parts: list[A.Piece], k: int, run: list[int], gold_at: int) -> int | None:
    """v6: a subject run that ends its piece, then a clause between commas, then a piece that
    opens with a copula or "has"/"had"/"have": the subject's verb (its index), or -1 when the
    inserted clause is an appositive that holds a lowercase gold in an answer that mixes cases
    ("Antonius Sharp, a British actor, has played ...": the gold, not a second answer); None otherwise. The clause
    opens in lowercase ("X, founded by Y, is ...") or holds that gold."""
    words = tk.words
    if run[-1] + 1 != parts[k].stop or k + 2 >= len(parts) or parts[k + 1].via != "comma" \
            or parts[k + 2].via != "comma":
        return None
    verb = parts[k + 2].start
    if words[verb] not in A.COPULA | AUXILIARIES:
        return None
    inside = parts[k + 1].start < gold_at < parts[k + 1].stop and not tk.caps[gold_at] and tk.lettered
    if inside:
        return -1
    return verb if not tk.caps[parts[k + 1].start] else None


def extends_gold(tk: A.Tokens, parts: list[A.Piece], gold_pieces: list[GoldPiece], k: int, run: list[int]) -> bool:
    """v4: a lowercase run in a piece joined by "and" to a gold that a modifier or predicate
    follows in its piece continues that modifier or predicate ("The nasal septum is a thin layer
    of cartilage and bone", "a classic tale of redemption and the struggle between good and
    evil"): a description, not a second answer. Only in an answer that mixes cases, so a
    capitalised name or a number after the "and" still competes ("Tokyo of Japan and Seoul")."""
    if not tk.lettered or tk.caps[run[0]] or any(A.is_number(tk.words[j]) or any(c.isdigit() for c in tk.words[j])
                                                  for j in run):
        return False
    j = k
    while j > 0 and parts[j].via == "and":
        j -= 1
        if any(g.piece == j and g.continued and not g.conceded for g in gold_pieces):
            return True
    return False


def apposition(tk: A.Tokens, parts: list[A.Piece], heads: list[GoldPiece], k: int, at: int,
                protected: set[int]) -> bool:
    """Rule 5's one exception: a candidate in the piece right after a gold that ends its piece,
    after a soft mark, with no framing word before it ("Paris, France"). v4: also a capitalised
    name in a chain of such pieces after a gold's piece that ends in a place after a preposition
    ("a professional football team based in Doncaster, North Yorkshire, England", "a tennis
    tournament held at Wimbledon, London": the place's qualifiers, not a second answer)."""
    words = tk.words
    piece = parts[k]
    if piece.joint != "soft" or any(words[j] in FILLER for j in range(piece.start, at)):
        return False
    if any(g.piece == k - 1 and g.ends for g in heads):
        # v5: not a lowercase gold before a colon or dash and a name in an answer that mixes cases:
        # the gold is a description's word there, the label reading's mirror ("the city of seoul - Tokyo")
        gold = next(g for g in heads if g.piece == k - 1 and g.ends)
        return not (piece.via in ("colon", "dash") and tk.lettered and not tk.caps[gold.start] and tk.caps[at])
    ends_sentence = piece.stop >= len(words) or A.sentence_break(words, piece.stop, piece.stop + 1)
    if piece.via == "comma" and tk.lettered and not tk.caps[at] and ends_sentence \
            and any(g.piece == k - 1 and not g.ends and _lowercase_after(tk, parts[k - 1], g.start) for g in heads):
        return True  # v7: a lowercase appositive ending the sentence ("I am a football player, a professional footballer")
    if not tk.caps[at]:
        return False
    j = k - 1  # back over the place's other qualifiers ("North Yorkshire" before "England")
    while j >= 0 and parts[j].joint == "soft" and not any(g.piece == j for g in heads) \
            and A.bare_name(tk, A.content_runs(words, parts[j], protected)):
        j -= 1
    gold = next((g for g in heads if g.piece == j), None)
    if gold is None or gold.ends:
        return False
    preps = [i for i in range(gold.start + 1, parts[j].stop) if words[i] in A.PLACE_PREPOSITIONS and i not in protected]
    place = [i for i in range(preps[-1] + 1, parts[j].stop) if A.sep(words[i]) is None] if preps else []
    return any(tk.caps[i] for i in place) and all(tk.caps[i] or words[i] in STOPWORDS or i in protected for i in place)


def _lowercase_after(tk: A.Tokens, piece: A.Piece, gold_at: int) -> bool:
    """The words after the gold in its piece are lowercase words, no number ("football player")."""
    after = [i for i in range(gold_at + 1, piece.stop) if A.sep(tk.words[i]) is None]
    return all(not tk.caps[i] and tk.words[i].isalpha() for i in after)


# v5: words that name the kind of answer a label announces ("Sport: Football", "Capital city - Paris").
LABEL_WORDS = frozenset({"answer", "sport", "religion", "capital", "city", "country", "state", "genre", "occupation",
                         "profession", "job", "language", "color", "colour", "author", "writer", "director",
                         "producer", "composer", "screenwriter", "father", "mother", "place", "birthplace", "birth",
                         "date", "year", "name", "team", "nationality", "location", "type", "kind", "category"})
# v5: prepositions that open a sentence with the setting of its clause ("In England, the capital ... is London").
OPENERS = frozenset({"in", "at", "on", "during", "for", "from", "within", "across", "throughout", "under"})
# v5: pronouns that open a relative clause describing what stands before them ("Islam, which translates to ...").
RELATIVES = frozenset({"which", "who", "whose", "whom", "where"})


def label(tk: A.Tokens, parts: list[A.Piece], gold_pieces: list[GoldPiece], k: int, run: list[int]) -> bool:
    """v5: piece k opens its sentence and labels or describes the answer that the next piece,
    after a colon or a dash, opens with: words that name a kind of answer ("Sport: Football",
    "The capital city - Paris"), or, before a capitalised gold in an answer that mixes cases, a
    lowercase description of such a kind, with a function word and no number ("A capital state in
    a continent - Texas"). A name there still competes ("Seoul: Tokyo", "a city in Korea -
    Tokyo"), and so does a description of another kind ("No moons: Vega Baja", "Invention of
    blue diodes - Higgs boson work": the panel's wrong answers)."""
    words = tk.words
    if k + 1 >= len(parts) or parts[k + 1].via not in ("colon", "dash") or not A.sentence_start(words, parts[k].start):
        return False
    gold = next((g for g in gold_pieces if g.piece == k + 1 and g.start == parts[k + 1].start and not g.conceded), None)
    if gold is None:
        return False
    content = [words[j] for j in run if words[j] not in STOPWORDS]
    if content and all(w in LABEL_WORDS for w in content):
        return True
    return (tk.lettered and tk.caps[gold.start] and not A.bare(tk, run) and any(w in LABEL_WORDS for w in content)
            and not any(tk.caps[j] for j in run if j != parts[k].start)
            and not any(c.isdigit() for j in run for c in words[j]))


def opener(tk: A.Tokens, parts: list[A.Piece], gold_pieces: list[GoldPiece], k: int, run: list[int],
           protected: set[int]) -> bool:
    """v5: a prepositional phrase that opens its sentence, before a comma and a clause that goes
    on through a copula to the gold ("In England, the capital of the United Kingdom is London"):
    the clause's setting. Not before a gold that stands alone or after framing words ("During
    the last Ice Age, South Carolina", "In Seoul, it is Tokyo")."""
    words = tk.words
    piece = parts[k]
    if run[0] != piece.start or words[piece.start] not in OPENERS or not A.sentence_start(words, piece.start):
        return False
    if k + 1 >= len(parts) or parts[k + 1].via != "comma":
        return False
    gold = next((g for g in gold_pieces if g.piece == k + 1 and not g.conceded), None)
    if gold is None:
        return False
    before = A.Piece(parts[k + 1].start, gold.start, "soft")
    return bool(A.content_runs(words, before, protected)) and any(words[j] in A.COPULA for j in range(before.start, before.stop))


def relative_clauses(words: list[str], parts: list[A.Piece], gold_pieces: list[GoldPiece]) -> list[tuple[int, int]]:
    """v5: a relative clause ("which", "who", "where" after a comma) that follows the piece a gold
    opens, up to the end of its sentence ("Islam in the Arabic language, which translates to
    'Premise' or 'Aad' ..."): it describes the gold, so an "or" there offers no alternative and
    its names are not candidates. Only the gold before it can be credited ("Tokyo, which some
    call Seoul": Seoul's verdict still has Tokyo before it). Each gold's clause, (first token, end)."""
    spans = []
    for gold in gold_pieces:
        k = gold.piece + 1
        if gold.piece < 0 or gold.conceded:
            continue
        opens = None
        if k < len(parts) and parts[k].via == "comma" and words[parts[k].start] in RELATIVES \
                and gold.start == parts[gold.piece].start:
            opens = parts[k].start
        else:  # v6: "that" / "which" / "who" inside the gold's own piece ("The science fiction genre is a
            # broad term that encompasses any narrative that is not grounded in science or technology");
            # v7: also after a gold that does not open its piece ("X is a professional soccer player who
            # is known for his athleticism and talent")
            opens = next((i for i in range(gold.start + 1, parts[gold.piece].stop)
                          if words[i] in RELATIVES or words[i] == "that"), None)
        if opens is not None:
            end = next((i for i in range(opens, len(words)) if A.sentence_break(words, i, i + 1)), len(words))
            spans.append((opens, end))
    return spans


CUT_WORDS = 3  # v5: the most words a sentence cut off by the length limit may have begun


def cut_stop(tk: A.Tokens, spans: list[tuple[int, int]]) -> int:
    """v5: where an answer cut off by the length limit (an unclosed answer block) ends: before
    its last sentence when that sentence has no end mark, opens with a capital, has at most
    CUT_WORDS words and no gold, and a gold stands before it ("Soccer is an active sport ... on
    the field. The H"); a longer tail, or one after an abbreviation's stop ("Ross Perot, Jr. is
    a fictional character ..."), is read as written. Only the answer before the cut can be
    credited, so a deliberate cut buys nothing ("Seoul. Tokyo" unclosed: Seoul, never Tokyo)."""
    words = tk.words
    breaks = [i for i in range(len(words)) if A.sentence_break(words, i, i + 1)]
    if not breaks or breaks[-1] == len(words) - 1 or not tk.caps[breaks[-1] + 1]:
        return len(words)
    last = breaks[-1]
    tail = [w for w in words[last + 1:] if A.sep(w) is None]
    if len(tail) <= CUT_WORDS and any(s[1] < last for s in spans) and not any(s[1] > last for s in spans):
        return last + 1
    return len(words)


# v7: words that make a question offer its own answers ("Which is larger, Jupiter or Saturn?", "the
# game between the Patriots and the Eagles"): there the question's words may be candidates.
QUESTION_CHOICES = frozenset({"or", "nor", "vs", "versus", "between", "either", "whether"})


def topic_words(question: str | None, refs: Sequence[str]) -> frozenset[tuple[str, bool]]:
    """v7: the question's words (normalised as an answer's, each with whether it is capitalised),
    which an answer may restate as context; empty without a question, when the question offers
    choices (QUESTION_CHOICES), or when a reference stands in it ("In what country is Lau,
    Nigeria?": an answer that echoes the question, "Lau, Nigeria", is read as v6 reads it)."""
    if not question:
        return frozenset()
    tk = A.tokens(question)
    plain = [(w, cap) for w, cap in zip(tk.words, tk.caps) if A.sep(w) is None]
    if {w for w, _ in plain} & QUESTION_CHOICES or A.gold_spans(tk.words, refs):
        return frozenset()
    return frozenset(plain)


def restated(tk: A.Tokens, run: list[int], topic: frozenset[tuple[str, bool]]) -> bool:
    """v7: a run made only of the question's own words, as the question writes them (case
    included, in an answer that mixes cases), one of them no function word, restates the
    question's topic or entity ("Scottish 1911-12 Scottish Cup - Football" for "What sport does
    1911-12 Scottish Cup play?", "Basso, Haiti" for "In what country is Basso?", "The capital ...
    of Andhra Pradesh, India, is Hyderabad" for "What is Hyderabad the capital of?"): context, not a
    second answer. Not "the Chair of the Federal Reserve" for "who appoints the chair of the
    federal reserve" (a name the question does not write as one), and never a gold: a guess
    restated from the question is still a guess."""
    content = [j for j in run if A.sep(tk.words[j]) is None]
    if not topic or not content or all(tk.words[j] in STOPWORDS for j in content):
        return False
    if not tk.lettered:
        words = {w for w, _ in topic}
        return all(tk.words[j] in words for j in content)
    return all((tk.words[j], tk.caps[j]) in topic for j in content)
