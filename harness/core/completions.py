"""Completion parsing and token-to-sentence alignment (docs/PROTOCOL.md §1), shared by every method.

A completion is asked to look like `<think>reasoning</think><answer>answer</answer>`. This
module finds the two sections, splits each (after stripping the tags) into sentences, and
maps every completion token to the sentence it belongs to:

    sigma(t) = index of the sentence that token t's characters fall in, or None for tags,
               whitespace between sentences, special tokens (EOS) and text outside the tags.

Token character spans come from the tokenizer's offsets when re-tokenising the decoded text
gives back exactly the generated ids; sampled completions are often tokenised
non-canonically, so otherwise the spans come from incremental decoding, which is exact by
construction and verified against the full decoded text (never from summing per-token
decodes, which drifts on multi-byte characters).
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Sequence


# Tags as the evaluator reads them (factrl.harness.core.answers): exact, case-insensitive.
_ANSWER_TAG = re.compile(r"<(/?)answer>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
# Reference splitter: break on whitespace that follows `.`, `!` or `?`. Splits `Dr. Smith`,
# keeps `1.5` (no whitespace after the dot).
_REFERENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
# Abbreviation-aware option: the same breaks, except after a known abbreviation or a single
# capital initial (`Dr.`, `U.S.`, `George F. Simon`).
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e no vol fig gen gov lt col sgt capt rev "
    "inc ltd co corp jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k".split()
)
# The reference splitter is the protocol's (docs/PROTOCOL.md §1): what the judge's tools, claims and
# probes split with. A method's `splitter:` setting is its own choice among SPLITTERS, passed in.
REFERENCE_SPLITTER = "reference"
SPLITTERS = (REFERENCE_SPLITTER, "abbreviations")
REPLACEMENT = "\ufffd"  # what a decoder prints for an incomplete UTF-8 sequence


@dataclass(frozen=True)
class Section:
    """The inner text of one tagged block: text[start:end], tags excluded."""

    name: str  # "think" or "answer"
    start: int
    end: int
    closed: bool  # its closing tag is present


@dataclass(frozen=True)
class Sentence:
    index: int  # position in the completion's sentence list (think sentences first)
    section: str
    start: int  # character span in the completion text (stripped of surrounding spaces)
    end: int
    text: str


@dataclass
class Alignment:
    """Everything the reward side needs about one completion's tokens and sentences."""

    text: str  # the completion decoded from its ids (special tokens dropped)
    sections: list[Section]
    sentences: list[Sentence]
    sigma: list[int | None]  # one entry per completion token
    spans: list[tuple[int, int] | None]  # character span of each token; None for special tokens
    method: str  # "offsets", "incremental" or "prefix": how the spans were obtained
    n_section_tokens: int  # tokens whose characters fall inside a section
    n_aligned: int  # of those, tokens mapped to a sentence

    @property
    def rate(self) -> float:
        """Share of in-section tokens that map to a sentence (0 when there is no section)."""
        return self.n_aligned / self.n_section_tokens if self.n_section_tokens else 0.0

    def usable(self, threshold: float = 0.5) -> bool:
        """docs/PROTOCOL.md §1: below the threshold a completion gets only the response-level return."""
        return bool(self.sentences) and self.rate >= threshold

    def tokens_of(self, index: int) -> list[int]:
        return [t for t, s in enumerate(self.sigma) if s == index]


# --------------------------------------------------------------------------- sections
def _answer_block(text: str) -> Section | None:
    """The block the evaluator judges: the last closed `<answer>...</answer>`, else the text
    after the last `<answer>` (a truncated completion)."""
    last_open, block = None, None
    for tag in _ANSWER_TAG.finditer(text):
        if tag.group(1):
            if last_open is not None:
                block, last_open = (last_open, tag.start()), None
        else:
            last_open = tag.end()
    if block is not None:
        return Section("answer", block[0], block[1], True)
    if last_open is not None:
        return Section("answer", last_open, len(text), False)
    return None


def find_sections(text: str) -> list[Section]:
    """The reasoning and final-answer blocks of a completion, in text order.

    think: the first `<think>...</think>`; a `</think>` with no `<think>` before it (chat
    templates that open the block in the prompt) starts the section at the text's start.
    Unclosed (a completion cut at the length limit), it runs to the next `<answer>` or the
    end: it is still reasoning the policy wrote.
    answer: the block `factrl.harness.core.answers.extract_answer` judges, so the sentences scored
    are the answer that earns the correctness reward. Other answer blocks are outside.
    """
    sections: list[Section] = []
    close = _THINK_CLOSE.search(text)
    if close is not None:
        opened = _THINK_OPEN.search(text, 0, close.start())
        think = Section("think", opened.end() if opened else 0, close.start(), True)
    else:
        opened = _THINK_OPEN.search(text)
        think = None
        if opened is not None:
            nxt = _ANSWER_TAG.search(text, opened.end())
            think = Section("think", opened.end(), nxt.start() if nxt else len(text), False)
    answer = _answer_block(text)
    if think is not None and answer is not None and answer.start < think.end and think.start < answer.end:
        # An answer block inside the reasoning: the reasoning stops where that block opens.
        tag_start = text.rfind("<", 0, answer.start)
        think = Section("think", think.start, max(think.start, tag_start), think.closed)
    for section in (think, answer):
        if section is not None:
            sections.append(section)
    return sorted(sections, key=lambda s: s.start)


# --------------------------------------------------------------------------- sentences
def _abbreviation_before(text: str, dot: int) -> bool:
    """Whether the `.` at text[dot] ends an abbreviation or an initial rather than a sentence."""
    if text[dot] != ".":
        return False
    word = re.search(r"(\S+)$", text[:dot])
    if not word:
        return False
    token = word.group(1).lstrip("(\"'[").lower()
    if len(token) == 1 and token.isalpha() and word.group(1)[-1].isupper():
        return True  # an initial: `George F. Simon`
    return token in _ABBREVIATIONS


def split_sentences(text: str, start: int = 0, end: int | None = None, *,
                    splitter: str = REFERENCE_SPLITTER) -> list[tuple[int, int]]:
    """Character spans of the sentences of text[start:end], each stripped of whitespace."""
    if splitter not in SPLITTERS:
        raise ValueError(f"unknown sentence splitter {splitter!r}; choose one of {SPLITTERS}")
    end = len(text) if end is None else end
    chunk = text[start:end]
    spans, piece = [], 0
    for brk in _REFERENCE_BREAK.finditer(chunk):
        if splitter == "abbreviations" and _abbreviation_before(chunk, brk.start() - 1):
            continue
        spans.append((piece, brk.start()))
        piece = brk.end()
    spans.append((piece, len(chunk)))
    out = []
    for a, b in spans:
        part = chunk[a:b]
        stripped = part.strip()
        if stripped:
            lead = len(part) - len(part.lstrip())
            out.append((start + a + lead, start + a + lead + len(stripped)))
    return out


def sentences_of(text: str, sections: Sequence[Section] | None = None, *,
                 splitter: str = REFERENCE_SPLITTER) -> list[Sentence]:
    """Sentences of every section, split separately after stripping the tags."""
    found = []
    for section in find_sections(text) if sections is None else sections:
        for a, b in split_sentences(text, section.start, section.end, splitter=splitter):
            found.append(Sentence(len(found), section.name, a, b, text[a:b]))
    return found


# --------------------------------------------------------------------------- token spans
def _decode(tokenizer: Any, ids: Sequence[int]) -> str:
    # Clean-up of tokenisation spaces rewrites text depending on what follows; switched off
    # so that decoding a prefix gives a prefix of the full decode. A fast tokenizer's Rust
    # decoder is called directly: it is what transformers' decode calls without clean-up,
    # minus a Python wrapper that costs more than the decode itself (alignment decodes once
    # per token).
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and hasattr(backend, "decode"):
        return backend.decode(list(ids), skip_special_tokens=True)
    return tokenizer.decode(list(ids), skip_special_tokens=True, clean_up_tokenization_spaces=False)


def _special_ids(tokenizer: Any) -> frozenset[int]:
    return frozenset(int(i) for i in (getattr(tokenizer, "all_special_ids", None) or []))


def _offset_spans(tokenizer: Any, ids: Sequence[int], text: str, special: frozenset[int]):
    """Spans from the tokenizer's offsets, or None unless re-tokenising gives back `ids`."""
    if not getattr(tokenizer, "is_fast", False):
        return None
    visible = [i for i, t in enumerate(ids) if t not in special]
    try:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    except (NotImplementedError, ValueError, TypeError):
        return None
    if list(enc["input_ids"]) != [ids[i] for i in visible]:
        return None
    spans: list[tuple[int, int] | None] = [None] * len(ids)
    for i, (a, b) in zip(visible, enc["offset_mapping"]):
        spans[i] = (int(a), int(b))
    return spans


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix; usually one string extends the other, so the
    fast check comes first, then a binary search of C-level comparisons."""
    if b.startswith(a):
        return len(a)
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _incremental_spans(tokenizer: Any, ids: Sequence[int], text: str, special: frozenset[int],
                       window: int = 6):
    """Spans by decoding a short window of clean context plus the new tokens.

    Decoding ids[w:k+1] and ids[w:j] from the same window start w cancels the decoder's
    start-of-text effects (SentencePiece drops the first space), so the difference is the
    text tokens j..k add. A token that ends inside a multi-byte character adds nothing until
    the character completes; such tokens share the span of the character they help build.
    Returns None when the pieces do not tile `text` exactly (the caller then decodes prefixes).
    """
    spans: list[tuple[int, int] | None] = [None] * len(ids)
    visible = [i for i, t in enumerate(ids) if t not in special]
    boundaries = [0]  # token indices where the decoded text so far is complete
    pos = 0
    pending: list[int] = []
    cached: tuple[int, int, str] = (-1, -1, "")  # (w, clean, decode of ids[w:clean])
    w_at = 0  # the window starts at boundaries[w_at]
    for n, k in enumerate(visible):
        pending.append(k)
        clean = boundaries[-1]
        if len(boundaries) - 1 - w_at > 2 * window:
            # Move the window start in jumps, so most tokens reuse the previous decode.
            w_at = len(boundaries) - 1 - window
        w = boundaries[w_at]
        if cached[:2] != (w, clean):
            cached = (w, clean, _decode(tokenizer, ids[w:clean]))
        before = cached[2]
        after = _decode(tokenizer, ids[w:k + 1])
        extends = after.startswith(before)
        if n < len(visible) - 1 and (not extends or after.endswith(REPLACEMENT)):
            # An incomplete character (a byte-fallback decoder may even turn the whole byte
            # run into replacement characters until it is valid): wait for the completing token.
            continue
        if not extends:
            return None
        new = after[len(before):]
        if text[pos:pos + len(new)] != new:
            return None
        # Where each pending token's own complete text ends, and whether it also carries the
        # first bytes of the next character (its decode runs past what the text confirms).
        ends, partial = [], []
        for j in pending[:-1]:
            dec = _decode(tokenizer, ids[w:j + 1])
            common = _common_prefix(dec, after)
            ends.append(pos + min(max(common - len(before), 0), len(new)))
            partial.append(len(dec) > common)
        ends.append(pos + len(new))
        partial.append(False)
        # A token carrying part of a character covers that character too, and a token that
        # adds no text (SentencePiece's stripped leading space) the next one, as the offsets
        # of a fast tokenizer do (`Ġæ` -> " 日").
        start, limit = pos, len(text)
        for j, stop, part in zip(pending, ends, partial):
            stop = max(stop, start)
            spans[j] = (start, min(stop + 1, limit) if (part or stop == start) else stop)
            start = stop
        pos += len(new)
        boundaries.append(k + 1)
        cached = (w, k + 1, after)
        pending = []
    return spans if pos == len(text) else None


def _prefix_spans(tokenizer: Any, ids: Sequence[int], text: str, special: frozenset[int]):
    """Last resort, quadratic: the stable length of every prefix decode against `text`."""
    spans: list[tuple[int, int] | None] = [None] * len(ids)
    stable, partial = [0], [False]
    for k in range(len(ids)):
        prefix = _decode(tokenizer, ids[:k + 1])
        stable.append(max(stable[-1], _common_prefix(prefix, text)))
        partial.append(len(prefix) > stable[-1])  # ends inside a character still incomplete
    for k, tid in enumerate(ids):
        if tid in special:
            continue
        a, b = stable[k], stable[k + 1]
        # A token that leaves a character incomplete, or adds no text, covers the next one.
        spans[k] = (a, min(b + 1, len(text)) if (partial[k + 1] or b == a) else b)
    return spans


def token_spans(tokenizer: Any, ids: Sequence[int], *, method: str = "auto",
                text: str | None = None) -> tuple[str, list[tuple[int, int] | None], str]:
    """(decoded text, character span per token, method used).

    method: "auto" (offsets if they round-trip, else incremental, else prefix), or force
    "offsets" / "incremental" / "prefix" (tests compare them). Special tokens get None.
    """
    ids = [int(i) for i in ids]
    text = _decode(tokenizer, ids) if text is None else text
    special = _special_ids(tokenizer)
    order = {"auto": ("offsets", "incremental", "prefix"), "offsets": ("offsets",),
             "incremental": ("incremental",), "prefix": ("prefix",)}.get(method)
    if order is None:
        raise ValueError(f"unknown span method {method!r}")
    builders = {"offsets": _offset_spans, "incremental": _incremental_spans, "prefix": _prefix_spans}
    for name in order:
        spans = builders[name](tokenizer, ids, text, special)
        if spans is not None:
            return text, spans, name
    raise ValueError(f"span method {method!r} does not apply to these ids (offsets do not round-trip)")


# --------------------------------------------------------------------------- alignment
def _overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def sigma_from_spans(spans: Sequence[tuple[int, int] | None], sentences: Sequence[Sentence],
                     sections: Sequence[Section]) -> tuple[list[int | None], int, int]:
    """(sigma, tokens inside a section, tokens mapped to a sentence).

    A token belongs to the sentence its characters overlap most (ties: the earlier one), so
    a Llama token `▁Paris` that carries the space before a sentence, or `.</` that carries
    the sentence's final dot and half a tag, still maps to its sentence.
    """
    sigma: list[int | None] = []
    inside = aligned = 0
    sent_spans = [(s.start, s.end) for s in sentences]
    sec_spans = [(s.start, s.end) for s in sections]
    ends = [b for _, b in sent_spans]  # sentences are disjoint and ordered, so ends increase
    for span in spans:
        if span is None or span[1] <= span[0]:
            sigma.append(None)
            continue
        if any(_overlap(span, sec) for sec in sec_spans):
            inside += 1
        best, best_overlap = None, 0
        for i in range(bisect_right(ends, span[0]), len(sent_spans)):
            if sent_spans[i][0] >= span[1]:
                break
            ov = _overlap(span, sent_spans[i])
            if ov > best_overlap:
                best, best_overlap = i, ov
        sigma.append(best)
        aligned += best is not None
    return sigma, inside, aligned


def align(tokenizer: Any, ids: Sequence[int], *, splitter: str = REFERENCE_SPLITTER,
          method: str = "auto") -> Alignment:
    """Decode `ids`, find sections and sentences, and map every token to its sentence."""
    text, spans, used = token_spans(tokenizer, ids, method=method)
    sections = find_sections(text)
    sentences = sentences_of(text, sections, splitter=splitter)
    sigma, inside, aligned = sigma_from_spans(spans, sentences, sections)
    return Alignment(text, sections, sentences, sigma, spans, used, inside, aligned)


def token_returns(sigma: Sequence[int | None], response_return: float,
                  sentence_rewards: Sequence[float] | None = None, weight: float | None = None, *,
                  lambda_c: float | None = None) -> list[float]:
    """R(t) = response_return + 1[sigma(t) is a sentence] * weight * sentence_rewards[sigma(t)]
    (docs/PROTOCOL.md §3). sigma: `Alignment.sigma`; sentence_rewards: one float per sentence;
    weight: theirs, required with them (a method setting: CorVer's method.lambda_c); 0 = plain
    response-level returns. `lambda_c=`: the keyword's former name, still accepted."""
    if lambda_c is not None:
        if weight is not None:
            raise TypeError("token_returns: pass the sentence weight once (weight=, formerly lambda_c=)")
        weight = lambda_c
    if sentence_rewards and weight is None:
        raise ValueError("token_returns: pass weight (the weight of the sentence rewards) with sentence_rewards")
    if not sentence_rewards or weight == 0:
        return [float(response_return)] * len(sigma)
    return [float(response_return) + (weight * sentence_rewards[s] if s is not None else 0.0)
            for s in sigma]


__all__ = ["Alignment", "REFERENCE_SPLITTER", "Section", "Sentence", "SPLITTERS", "align", "find_sections",
           "sentences_of", "sigma_from_spans", "split_sentences", "token_returns", "token_spans"]


def statement_guards(dedupe_statements: bool, max_rewarded_statements: int | None) -> list[str]:
    """The statement-sum guards that are on, as `key=value` (docs/CONTRACTS.md "Guards"): the
    methods that sum a reward over a completion's statements (RLFH, FoRAG) share these two."""
    found = ["dedupe_statements=true"] if dedupe_statements else []
    if max_rewarded_statements is not None:
        found.append(f"max_rewarded_statements={max_rewarded_statements}")
    return found
