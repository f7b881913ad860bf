"""The verifier's materials, as RLFH picks them (AlignRM/RLFH@78cd846 source/feedback/retrieval.py,
annotate.py:253-276; vectors tests/reference_vectors/rlfh/retrieval.json).

Materials of a pool row: the gold sentence `The correct answer for "<question>" is "<answer>".`
(dataset.py:114; title '') and the full text of each of the row's articles in the evidence store
(the release's `extra_materials`, the Wikipedia pages of the row's titles, dataset.py:87-102;
title = the article's). The release's HotpotQA rows also carry their context paragraphs as
untitled materials; the pool has none (they are paragraphs of the same pages), so ours start
with the gold sentence. An article's text is its store passages joined by spaces.

1. Sections (retrieval.py:58-79): each material's NLTK sentences (Punkt, English punkt_tab
   parameters) are added to a section until its NLTK word count (stopwords kept) exceeds
   `max_words_per_sec`; a section cut there gets "<title>" in front of its text and the
   title's words (stopwords removed) in front of its tokens; a material's remainder is a
   section without title, and a material that ends exactly at a cut still adds an empty
   section once any section exists (the release's `tokenized_secs != []` test).
2. Scores (retrieval.py:81-97): BM25Okapi (rank-bm25: k1 1.5, b 0.75, epsilon 0.25) over every
   section of the row; one query per NLTK sentence of the statement (the question when it
   has none), query words = NLTK words minus RLFH's stopwords (case-sensitive: "The" stays);
   each query keeps the scores at least its max_secs-th best (others 0), the kept scores are
   summed, the top max_secs sections by that sum are shown, except those scoring exactly 0
   (negative scores are kept). So the gold sentence is shown only when it ranks there.
The sections and the BM25 index of a row do not depend on the statement: they are built once
per row (the release rebuilds them per statement; same result) and kept for the run.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache
from typing import Any, Mapping

import numpy as np

from factrl.evals.factscore.stopwords import STOPWORDS as _FACTSCORE_STOPWORDS
from factrl.harness.services.evidence.store import split_titles

# nltk's English stopword list (179 words, the list the release loads: retrieval.py:10; the first
# 179 entries of FActScore's word list), then the release's additions.
NLTK_ENGLISH = _FACTSCORE_STOPWORDS[:179]
STOPS = frozenset(NLTK_ENGLISH) | {"!", ",", ".", "?", "-s", "-ly", "</s> ", "s"}
ROWS_KEPT = 4096  # rows whose index stays built (a pool question's statements share one)


@lru_cache(maxsize=1)
def _punkt():
    from collections import defaultdict

    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english  # NLTK's English punkt_tab parameters, packaged (no nltk_data download)

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = {tuple(c) for c in english.COLLOCATIONS}
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context = defaultdict(int, english.ORTHO_CONTEXT)
    return PunktSentenceTokenizer(params)


@lru_cache(maxsize=1)
def _treebank():
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def sent_tokenize(text: str) -> list[str]:
    """nltk.sent_tokenize(text) (English)."""
    return list(_sentences(text))


def word_tokenize(text: str, drop_stops: bool = True) -> list[str]:
    """nltk.word_tokenize(text) (its sentences, then the Treebank words), minus STOPS by default."""
    return list(_words(text, drop_stops))


# Cached: a step asks the same statements and titles again (a group's completions repeat each
# other; every statement of a row re-reads the row's titles), and NLTK's tokenizers were a third
# of RLFH's reward time with judge=reference. Pure functions of the text: no value changes.
@lru_cache(maxsize=8192)
def _sentences(text: str) -> tuple[str, ...]:
    return tuple(_punkt().tokenize(text))


@lru_cache(maxsize=8192)
def _words(text: str, drop_stops: bool) -> tuple[str, ...]:
    words = [w for sentence in _sentences(text) for w in _treebank().tokenize(sentence)]
    return tuple(w for w in words if w not in STOPS) if drop_stops else tuple(words)


def gold_sentence(question: str, answer: str) -> str:
    """dataset.py:114: the question without its final "?" (and any other "?") and the first answer."""
    q = str(question).strip()
    q = (q[:-1] if q.endswith("?") else q).replace("?", "")
    return f'The correct answer for "{q}" is "{answer}".'


def build_sections(titles: list[str], materials: list[str], max_words: int) -> tuple[list[str], list[list[str]]]:
    sections: list[str] = []
    tokenized: list[list[str]] = []
    for title, text in zip(titles, materials):
        section, tokens = "", []
        for sentence in sent_tokenize(text):
            tokens.extend(word_tokenize(sentence, drop_stops=False))
            section += f" {sentence}"
            if len(tokens) > max_words:
                if title != "":
                    tokens = word_tokenize(title) + tokens
                    section = f"<{title}>{section}"
                tokenized.append(tokens)
                sections.append(section.strip())
                section, tokens = "", []
        if section != "" or tokenized:
            tokenized.append(tokens)
            sections.append(section.strip())
    return sections, tokenized


def keep_top(scores: np.ndarray, k: int) -> np.ndarray:
    """The scores at least the k-th largest (ties kept); the rest 0 (retrieval.py:26-30)."""
    out = scores.copy()
    order = np.argsort(-out, axis=None)
    if len(order) > k:
        out[out < out[order[k - 1]]] = 0
    return out


class RowIndex:
    """The sections of one row and their BM25 index."""

    def __init__(self, titles: list[str], materials: list[str], max_words: int, gold: str | None):
        from rank_bm25 import BM25Okapi

        self.sections, tokenized = build_sections(titles, materials, max_words)
        self.gold = gold
        self.bm25 = BM25Okapi(tokenized) if self.sections else None

    def scores(self, query: str) -> np.ndarray:
        return np.asarray(self.bm25.get_scores(word_tokenize(query)), dtype=float)

    def top(self, statement: str, k: int, question: str | None = None) -> list[str]:
        if self.bm25 is None:
            return []
        queries = sent_tokenize(statement)
        if not queries:
            if question is None:
                return self.sections[:k]
            queries = [question]
        total = keep_top(self.scores(queries[0]), k)
        for query in queries[1:]:
            total = total + keep_top(self.scores(query), k)
        return [self.sections[i] for i in np.argsort(-total)[:k] if total[i] != 0]


class Retriever:
    """materials(row, statement) for the verify prompt; one RowIndex per row, built on first use."""

    def __init__(self, store: Any, *, max_secs: int, max_words_per_sec: int, gold_material: bool):
        self.store, self.k, self.max_words, self.gold_material = store, max_secs, max_words_per_sec, gold_material
        self._rows: OrderedDict[tuple, RowIndex] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = {"rows_built": 0, "statements": 0, "gold_shown": 0}

    def articles(self, row: Mapping[str, Any]) -> list[tuple[str, str]]:
        """(store title, full text) of each of the row's articles the store holds."""
        out = []
        for title in dict.fromkeys(split_titles(row.get("title"))):
            passages = self.store.by_title(title, k=1 << 30)
            if passages:
                out.append((passages[0].title, " ".join(p.text.strip() for p in passages if p.text.strip())))
        return out

    def index(self, row: Mapping[str, Any]) -> RowIndex:
        answers = row.get("answers") or []
        answer = answers if isinstance(answers, str) else (str(answers[0]) if answers else None)
        gold = gold_sentence(str(row.get("question", "")), answer) if self.gold_material and answer else None
        key = (str(row.get("title") or ""), gold)
        with self._lock:
            if key in self._rows:
                self._rows.move_to_end(key)
                return self._rows[key]
        articles = self.articles(row)
        titles = ([""] if gold else []) + [t for t, _ in articles]
        materials = ([gold] if gold else []) + [text for _, text in articles]
        built = RowIndex(titles, materials, self.max_words, gold)
        with self._lock:
            self._rows[key] = built
            self.stats["rows_built"] += 1
            while len(self._rows) > ROWS_KEPT:
                self._rows.popitem(last=False)
        return built

    def materials(self, row: Mapping[str, Any], statement: str) -> list[str]:
        index = self.index(row)
        shown = index.top(statement, self.k, question=str(row.get("question", "")) or None)
        with self._lock:
            self.stats["statements"] += 1
            self.stats["gold_shown"] += bool(index.gold) and index.gold in shown
        return shown


__all__ = ["NLTK_ENGLISH", "STOPS", "Retriever", "RowIndex", "build_sections", "gold_sentence", "keep_top",
           "sent_tokenize", "word_tokenize"]
