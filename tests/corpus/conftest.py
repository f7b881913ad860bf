"""Fixtures for the corpus service tests: real tokenizers (embedded, offline), small indexes
built from text the tests write, and a way to run risky code in a child process."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Words for the synthetic corpus: KEYWORDS are the query terms, FILLER surrounds them. No
# keyword is a filler word or a prefix of one, so a plain word count is the truth.
KEYWORDS = ["Castle", "Violin", "Tiger", "Marble", "Comet", "Harbor", "Falcon", "Orchid"]
FILLER = ["stone", "water", "light", "green", "quiet", "table", "north", "paper", "sound", "cloud",
          "bread", "field", "glass", "small", "river", "metal", "early", "grass", "plain", "music"]
EDGE = 30  # filler words before the first and after the last keyword of a document
NEAR = 3  # keywords "together" are at most this many words apart
FAR = 80  # keywords "apart" are at least this many words apart
WINDOW = 20  # max_diff_tokens used with this corpus: NEAR fits, FAR and EDGE do not


def make_documents(n_docs: int = 240, seed: int = 7) -> list[list[str]]:
    """Documents as word lists: each holds one or two keywords, either NEAR or FAR apart."""
    rng = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        a, b = rng.sample(KEYWORDS, 2)
        mode = rng.choice(["near", "near", "far", "single"])
        body = [rng.choice(FILLER) for _ in range(rng.randint(2, 6))]
        if mode == "near":
            gap = rng.randint(0, NEAR - 1)
            middle = [a] + [rng.choice(FILLER) for _ in range(gap)] + [b]
        elif mode == "far":
            middle = [a] + [rng.choice(FILLER) for _ in range(FAR)] + [b]
        else:
            middle = [a]
        edge = lambda: [rng.choice(FILLER) for _ in range(EDGE)]  # noqa: E731
        docs.append(edge() + body + middle + body + edge())
    return docs


def independent_count(docs: list[list[str]], a: str, b: str) -> int:
    """Plain Python: documents with both words at most NEAR words apart."""
    total = 0
    for words in docs:
        pa = [i for i, w in enumerate(words) if w == a]
        pb = [i for i, w in enumerate(words) if w == b]
        total += sum(1 for i in pa if any(abs(i - j) <= NEAR for j in pb))
    return total


@pytest.fixture(scope="session")
def tokenizers():
    """The two embedded tokenizers: GPT-2-style BPE (SmolLM2) and SentencePiece (tiny-llama)."""
    from factrl.harness.services.corpus.tokens import identify, load_index_tokenizer

    out = {}
    for spec in ("smollm2-135m", "tiny-llama"):
        tok = load_index_tokenizer(spec)
        out[spec] = (tok, identify(tok, spec))
    return out


@pytest.fixture(scope="session")
def corpus_docs():
    return make_documents()


@pytest.fixture(scope="session")
def corpus_file(tmp_path_factory, corpus_docs) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "docs.jsonl"
    with open(path, "w") as handle:
        for i, words in enumerate(corpus_docs):
            handle.write(json.dumps({"text": " ".join(words), "id": i}) + "\n")
    return path


@pytest.fixture(scope="session")
def built_index(tmp_path_factory, tokenizers, corpus_file):
    """Index of the synthetic corpus per tokenizer (built once per session)."""
    from factrl.harness.services.corpus import build_index

    cache = {}

    def get(spec: str = "smollm2-135m"):
        if spec not in cache:
            tok, ident = tokenizers[spec]
            out = tmp_path_factory.mktemp("idx") / f"synthetic-{spec}"
            cache[spec] = build_index(out, [str(corpus_file)], tok, ident, force=False)
        return cache[spec]

    return get


def corpus_cfg(index_dir, tokenizer="smollm2-135m", **overrides):
    cfg = {"backend": "local", "source": "path", "index_dir": str(index_dir), "tokenizer": tokenizer,
           "max_clause_freq": 500000, "max_diff_tokens": WINDOW, "cache": False}
    cfg.update(overrides)
    return cfg


def run_isolated(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run Python code in a child process: an engine segfault fails the test, not pytest."""
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)
