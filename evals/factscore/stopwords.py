"""Which token ids the NPM scorer never masks (docs/BASELINES.md §7), and how they compare with FActScore's.

Sources, chosen by `eval.factscore_options.npm.stopwords`:
- `auto` (default): `factscore_ids` when the tokenizer has RoBERTa's vocabulary (npm-single's,
  so the default run skips exactly the ids FActScore skips), `words` otherwise (any other
  masked LM, e.g. the stand-in); the source actually used is recorded;
- `words` (STOPWORDS_VERSION): NLTK's English stopword list plus punctuation, each
  word mapped through the masked LM's own tokenizer (with and without the leading-space
  marker, lower-case and capitalised, single-token forms only), so any tokenizer works;
- `factscore_ids`: the 211 RoBERTa ids of FActScore's `roberta_stopwords.txt` (shmsw25/FActScore
  @51b4e57, MIT), valid only for a tokenizer with RoBERTa's vocabulary (npm-single's).
On a RoBERTa vocabulary the scorer records how the two sets differ (`stopword_diff`), so a
result on the real model says whether the derived list reproduces FActScore's.
"""
from __future__ import annotations

from typing import Any, Sequence

from factrl.harness.core.errors import ConfigError

STOPWORDS_VERSION = "1"
SOURCES = ("auto", "words", "factscore_ids")

# NLTK's English stopword list (179 words) plus punctuation: the words FActScore's id file
# was made from, kept here so no file is opened by a relative path (docs/BASELINES.md §9).
STOPWORDS = tuple("""i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
yourselves he him his himself she she's her hers herself it it's its itself they them their theirs themselves
what which who whom this that that'll these those am is are was were be been being have has had having do does
did doing a an the and but if or because as until while of at by for with about against between into through
during before after above below to from up down in out on off over under again further then once here there
when where why how all any both each few more most other some such no nor not only own same so than too very
s t can will just don don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't
doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't
shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't""".split()) + tuple(
    ". , ; : ! ? ' \" ( ) [ ] - -- ' s 's".split())

# FActScore's roberta_stopwords.txt: RoBERTa (GPT-2 BPE, fairseq dictionary) ids, one per line.
FACTSCORE_IDS = frozenset(int(i) for i in """
4 5 6 7 8 9 10 11 12 13 14 15 16 19 21 22 23 24 25 28 30 31 32 33 34 35 36 37 39 40 41 42 43 45 47 49 50
51 52 53 54 55 56 57 58 59 61 62 63 64 66 68 69 70 71 73 77 79 81 84 87 88 89 95 97 98 99 103 106 108 109
110 111 113 114 116 122 123 127 128 129 131 136 137 141 142 143 144 145 147 148 149 150 159 160 162 167 172
182 197 207 209 215 218 222 223 227 258 259 276 308 328 349 350 351 359 367 385 399 454 456 473 475 479 519
524 579 596 608 617 630 646 683 742 769 787 849 874 938 939 947 965 1003 1009 1021 1039 1065 1215 1235 1423
1495 1589 1629 1640 1705 1721 1979 2025 2055 2156 2185 2220 2282 2512 2661 2744 2864 3226 3486 3559 4288
4395 4832 4839 5030 5214 5457 5844 7606 8061 9131 10431 10975 12905 14314 14434 15157 15483 15698 17487
18134 18212 19385 20343 22209 23367 24303 25522 25606 27779 27785 28696 31954 34437 35227 35524 37249 37457
41552 44128 45152""".split())
ROBERTA_VOCAB = 50265  # roberta-base / roberta-large / npm-single


def word_ids(tokenizer: Any, words: Sequence[str] = STOPWORDS) -> frozenset[int]:
    """Ids of the words that are one token, with and without a leading space, in any case form
    the word list has plus its capitalised form (sentence starts)."""
    out: set[int] = set()
    for word in words:
        for form in {word, word.capitalize()}:
            for text in (form, " " + form):
                ids = tokenizer(text, add_special_tokens=False)["input_ids"]
                if len(ids) == 1:
                    out.add(int(ids[0]))
    return frozenset(out)


def is_roberta_vocab(tokenizer: Any) -> bool:
    """RoBERTa's vocabulary: 50,265 entries, id 5 = " the" and id 4 = "." (fairseq order)."""
    try:
        return len(tokenizer) == ROBERTA_VOCAB and tokenizer.convert_ids_to_tokens([4, 5]) == [".", "\u0120the"]
    except Exception:  # noqa: BLE001 - any tokenizer that cannot answer is not RoBERTa's
        return False


def resolve_source(tokenizer: Any, source: str) -> str:
    """`auto` -> `factscore_ids` on a RoBERTa vocabulary, else `words`; other sources as given."""
    if source == "auto":
        return "factscore_ids" if is_roberta_vocab(tokenizer) else "words"
    return source


def stopword_ids(tokenizer: Any, source: str = "auto") -> frozenset[int]:
    """The ids `source` names for this tokenizer; a one-line ConfigError for a bad choice."""
    source = resolve_source(tokenizer, source) if source in SOURCES else source
    if source == "words":
        return word_ids(tokenizer)
    if source == "factscore_ids":
        if not is_roberta_vocab(tokenizer):
            raise ConfigError("eval.factscore_options.npm.stopwords=factscore_ids needs a masked LM with RoBERTa's "
                              "vocabulary (facebook/npm-single); use stopwords=words for this model.")
        return FACTSCORE_IDS
    raise ConfigError(f"eval.factscore_options.npm.stopwords={source!r}: use one of {', '.join(SOURCES)}.")


def diff(tokenizer: Any, ours: frozenset[int], reference: frozenset[int] = FACTSCORE_IDS) -> dict[str, Any]:
    """How `ours` differs from `reference`, as token strings (sorted by id) and counts."""
    only_ours, only_ref = sorted(ours - reference), sorted(reference - ours)
    tokens = lambda ids: tokenizer.convert_ids_to_tokens(ids) if ids else []  # noqa: E731
    return {"reference": "FActScore roberta_stopwords.txt (211 ids)", "ours": len(ours), "shared": len(ours & reference),
            "only_ours": tokens(only_ours), "only_reference": tokens(only_ref)}
