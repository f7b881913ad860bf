"""Answer extraction, normalisation, refusal detection and closed-book matching (docs/PROTOCOL.md §6).

This module is the shared definition of "correct" for evaluation *and* for the training
correctness reward, so it imports nothing heavy (no torch, no datasets) and its hot path is
plain string operations:

- `normalize_answer`: NFKD, combining marks dropped, case folded (`str.casefold`, so "ß" is
  "ss"; dotless "ı" and the stroked letters ł ø đ ħ ŧ become i l o d h t), every non-alphanumeric
  character (ASCII or Unicode punctuation, symbols, emoji, `_`) to a space, articles a/an/the
  dropped, spaces collapsed. The result is a space-joined token string.
- `extract_answer`: the final answer of a completion (`<think>...</think><answer>...</answer>`);
  `block="first"` reads the first block instead (KnowRL's release reads the first).
- `answer_blocks`: every closed answer block, in order.
- `is_refusal`: the normalised answer is exactly one of the three abstention forms.
- `match_closed_book`: bidirectional containment on token boundaries, with the reverse
  direction (answer inside a reference) allowed only for answers with a content token.

Change any behaviour here (normalisation, stopwords, refusal list, extraction, matching) and
you must bump `SCORER_VERSION` (harness/core/answers/__init__.py; the default scorer,
evals/scorers/default.py, is built on these helpers); `tests/evals/test_eval_version.py` pins a fingerprint of the behaviour and fails until
you do.
"""
from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache
from typing import Iterable, NamedTuple, Sequence

ARTICLES = frozenset({"a", "an", "the"})

# ASCII fast path: one bytes.translate lower-cases (for ASCII the same as casefold) and turns
# every ASCII character that is neither alphanumeric nor whitespace into a space
# (str.translate is ~8x slower). The Unicode path below applies the same rule, so both paths
# agree on every input.
_ASCII_FOLD = bytes(
    ord(chr(c).lower()) if chr(c).isalnum() or chr(c).isspace() else 32 for c in range(128)
) + bytes(range(128, 256))
_NON_WORD = re.compile(r"[\W_]+")  # \W is "not alphanumeric and not _" for str patterns


@lru_cache(maxsize=1)
def _marks_table() -> dict[int, None]:
    """str.translate table deleting every combining mark (built on first non-ASCII text, ~60 ms)."""
    return {cp: None for cp in range(sys.maxunicode + 1) if unicodedata.combining(chr(cp))}


def _drop_marks(text: str) -> str:
    return unicodedata.normalize("NFKD", text).translate(_marks_table())


# Latin letters that NFKD leaves whole although they are a base letter plus a stroke or minus
# a dot, so dropping marks cannot reach the plain spelling ("Almatı" vs "ALMATI", "Łódź" vs
# "Lodz"). Applied after casefold, which maps their capitals onto these ("Ł" -> "ł"); "İ" needs
# no entry (NFKD gives "I" + a dot mark) and neither does "ß" (casefold gives "ss").
_BASE_LETTERS = str.maketrans({"ı": "i", "ł": "l", "ø": "o", "đ": "d", "ħ": "h", "ŧ": "t"})


@lru_cache(maxsize=1 << 16)  # pure; strict accuracy normalises each word of an answer, and words repeat
def normalize_answer(text: str) -> str:
    """Normalised token string of `text` ("" when nothing is left).

    Combining marks are dropped rather than turned into spaces, so "Müller" becomes
    "muller" (one token) and matches an ASCII spelling; case folding makes "THEISSEN" and
    "Theißen" one token. Apostrophes are punctuation: "Jane's" -> "jane s", "don't" -> "don t".
    Idempotent.
    """
    if not text:
        return ""
    if text.isascii():
        text = text.encode("ascii").translate(_ASCII_FOLD).decode("ascii")
    else:
        # Fold twice: casefold() can produce characters that NFKD decomposes again (and NFKD
        # can produce upper-case letters, e.g. U+210C -> "H"); the second pass makes it idempotent.
        text = _drop_marks(_drop_marks(text).casefold()).casefold().translate(_BASE_LETTERS)
        text = _NON_WORD.sub(" ", text)
    tokens = text.split()
    if ARTICLES.isdisjoint(tokens):  # the common case, checked in C
        return " ".join(tokens)
    return " ".join([t for t in tokens if t not in ARTICLES])


# Function words: an answer made only of these (or of one-character tokens) has no content
# and may not match by being *inside* a reference (docs/PROTOCOL.md §6), nor win the TruthfulQA rule.
# Written for this harness; includes the fragments that contractions leave after
# normalisation ("don t" -> "don"). Number words are deliberately absent ("one" can be an answer).
STOPWORDS = frozenset("""
a an the this that these those some any each every either neither both all few many much more
most other another such no none nor not own same so than too very yes
i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his
himself she her hers herself it its itself they them their theirs themselves who whom whose
which what whatever whoever whichever
am is are was were be been being have has had having do does did doing will would shall
should can could may might must ought
of in on at by for with about against between into through during before after above below
to from up down out off over under again further across along among around behind beside
beyond near onto toward towards upon within without via per
and or but if then else because as until while although though unless whether since
here there when where why how now still even ever never always also just only once quite
rather s t d ll m re ve don didn doesn isn aren wasn weren hasn haven hadn won wouldn shan
shouldn couldn mightn mustn needn
""".split())

# The three abstention forms of the shared system prompt, normalised by the same function
# as answers, so "I don't know", "I don’t know." and "i DON'T know!" all become "i don t know".
# "I dont know" (no apostrophe) is *not* a refusal: the span must be exactly one of these.
REFUSAL_FORMS = ("I don't know", "I do not know", "I have no comment")
REFUSALS = frozenset(normalize_answer(form) for form in REFUSAL_FORMS)


def is_refusal(answer: str) -> bool:
    """True when the answer span, normalised, is exactly one of `REFUSAL_FORMS`."""
    return normalize_answer(answer) in REFUSALS


def has_content(normalized: str) -> bool:
    """True when a normalised answer has a token that is not a stopword and not one character."""
    return any(len(tok) > 1 and tok not in STOPWORDS for tok in normalized.split())


# --------------------------------------------------------------------------------------------
# Extraction
# --------------------------------------------------------------------------------------------
_ANSWER_TAG = re.compile(r"<(/?)answer>", re.IGNORECASE)
_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
_OPEN, _CLOSE = "<answer>", "</answer>"


class Extraction(NamedTuple):
    """What a completion says, split by its tags (tags match case-insensitively).

    answer: the final answer, stripped ("" when there is no answer block): the text between
        the last `<answer>` that a `</answer>` follows and the first `</answer>` after it, so a
        complete block beats a trailing truncated one and nested blocks give the innermost
        last answer. With no closed block, the text after the last `<answer>` (a truncated
        completion) is used and `closed` is False.
    think: the reasoning inside the first think block (or before a lone `</think>`, as when a
        chat template opens the block in the prompt); "" when absent.
    has_answer_block: an `<answer>` tag was found.
    closed: the chosen block has its `</answer>`.
    n_answer_tags: number of `<answer>` opening tags (2+ means repeated or nested blocks).
    """

    answer: str
    think: str
    has_answer_block: bool
    closed: bool
    n_answer_tags: int = 0

    @property
    def format_ok(self) -> bool:
        """One closed, non-empty answer block (docs/PROTOCOL.md §3's format rule, plus "not repeated")."""
        return self.closed and self.n_answer_tags == 1 and bool(self.answer)


_NO_ANSWER = Extraction("", "", False, False, 0)
_make = tuple.__new__  # builds an Extraction without NamedTuple's Python-level __new__ (hot path)


def _positions(completion: str, pattern: re.Pattern) -> tuple[list[int], list[tuple[int, int]]]:
    """(opening tag ends, closing tag spans) of a tag, for text where lower() may move indexes."""
    opens, closes = [], []
    for tag in pattern.finditer(completion):
        (closes.append(tag.span()) if tag.group(1) else opens.append(tag.end()))
    return opens, closes


def extract_answer(completion: str, *, think: bool = True, block: str = "last") -> Extraction:
    """Split a completion into its final answer and reasoning (see `Extraction`).

    think=False skips the reasoning (`think` is then ""): scorers only need the answer.
    block: "last" (the protocol's rule, above) or "first": the first closed block (the first
    `</answer>` and the nearest `<answer>` before it, i.e. `answer_blocks(completion)[0]`); with
    no closed block, the text after the first `<answer>` up to the next one (`closed` False).
    Never raises on text: unclosed, repeated, nested or stray tags all give a defined result.
    """
    if block != "last":
        if block != "first":
            raise ValueError(f"extract_answer: block must be 'last' or 'first', got {block!r}")
        return _extract_first(completion or "", think)
    if not completion:
        return _NO_ANSWER
    if completion.isascii():
        # Fast path (nearly every completion): lower() keeps indexes, so str.find does the work.
        low = completion.lower()
        close_think = low.find("</think>") if think else -1
        think = ""
        if close_think >= 0:
            open_think = low.find("<think>", 0, close_think)
            think = completion[open_think + 7 if open_think >= 0 else 0:close_think].strip()
        start = low.rfind(_OPEN)
        if start < 0:
            return _make(Extraction, ("", think, False, False, 0))
        n_open = low.count(_OPEN)
        end = low.find(_CLOSE, start)
        if end < 0:
            last_close = low.rfind(_CLOSE, 0, start)
            inner = low.rfind(_OPEN, 0, last_close) if last_close >= 0 else -1
            if inner < 0:
                return _make(Extraction, (completion[start + 8:].strip(), think, True, False, n_open))
            start, end = inner, low.find(_CLOSE, inner)
        return _make(Extraction, (completion[start + 8:end].strip(), think, True, True, n_open))
    return _extract_general(completion, think)


def _extract_general(completion: str, think: bool = True) -> Extraction:
    """`extract_answer` on regex tag positions: the same rule for any text (tests compare both)."""
    t_opens, t_closes = _positions(completion, _THINK_TAG) if think else ([], [])
    think = ""
    if t_closes:
        first_close = t_closes[0][0]
        before = [o for o in t_opens if o <= first_close]
        think = completion[before[0] if before else 0:first_close].strip()
    opens, closes = _positions(completion, _ANSWER_TAG)
    if not opens:
        return Extraction("", think, False, False, 0)
    for start in reversed(opens):
        end = next((c for c, _ in closes if c >= start), None)
        if end is not None:
            return Extraction(completion[start:end].strip(), think, True, True, len(opens))
    return Extraction(completion[opens[-1]:].strip(), think, True, False, len(opens))


def answer_blocks(completion: str) -> list[str]:
    """Every closed answer block of a completion, stripped, in order.

    A block is the text between a `</answer>` and the nearest `<answer>` before it that no
    earlier block used, so nested blocks give their innermost text and the last element is
    `extract_answer(completion).answer` whenever that block is closed."""
    if not completion:
        return []
    blocks, open_at = [], None
    for tag in _ANSWER_TAG.finditer(completion):
        if not tag.group(1):
            open_at = tag.end()
        elif open_at is not None:
            blocks.append(completion[open_at:tag.start()].strip())
            open_at = None
    return blocks


def _extract_first(completion: str, think: bool) -> Extraction:
    last = _extract_general(completion, think)  # the think block and the tag count
    if not last.has_answer_block:
        return last
    blocks = answer_blocks(completion)
    if blocks:
        return Extraction(blocks[0], last.think, True, True, last.n_answer_tags)
    opens = [t.end() for t in _ANSWER_TAG.finditer(completion) if not t.group(1)]
    end = opens[1] - len(_OPEN) if len(opens) > 1 else len(completion)
    return Extraction(completion[opens[0]:end].strip(), last.think, True, False, last.n_answer_tags)


# --------------------------------------------------------------------------------------------
# Closed-book matching
# --------------------------------------------------------------------------------------------
def prepare_references(references: Iterable[str], memo: dict[str, str] | None = None) -> tuple[str, ...]:
    """Normalised references padded with spaces (" tok tok "), empties and duplicates dropped.

    Padding turns a token-boundary containment test into one substring test:
    " 1 " in " 1945 " is False, " 1945 " in " may 1945 " is True.
    memo: optional reference -> padded form cache shared across one set's records.
    """
    seen: dict[str, None] = {}
    for ref in references:
        padded = memo.get(ref) if memo is not None else None
        if padded is None:
            norm = normalize_answer(ref) if isinstance(ref, str) else ""
            padded = f" {norm} " if norm else ""
            if memo is not None:
                memo[ref] = padded
        if padded:
            seen.setdefault(padded, None)
    return tuple(seen)


@lru_cache(maxsize=16384)
def _prepared(references: tuple[str, ...]) -> tuple[str, ...]:
    # The training reward asks about the same question's references G times in a row.
    return prepare_references(references)


def match_prepared(normalized_answer: str, prepared: Sequence[str]) -> tuple[bool, bool]:
    """(bidirectional, one_way) match of a normalised answer against prepared references.

    one_way: some reference occurs in the answer on token boundaries.
    bidirectional: one_way, or the answer occurs inside some reference and has a content token.
    An empty answer matches nothing.
    """
    if not normalized_answer:
        return False, False
    padded = f" {normalized_answer} "
    for ref in prepared:
        if ref in padded:
            return True, True
    if has_content(normalized_answer):
        for ref in prepared:
            if padded in ref:
                return True, False
    return False, False


def match_closed_book(answer: str, references: Sequence[str]) -> bool:
    """docs/PROTOCOL.md §6 closed-book correctness of an extracted answer (bidirectional).

    Refusals are not special-cased here: callers that score refusals as 0 check `is_refusal`
    first (a refusal only matches a reference that is itself an abstention phrase).
    """
    refs = tuple(references) if not isinstance(references, tuple) else references
    return match_prepared(normalize_answer(answer), _prepared(refs))[0]

