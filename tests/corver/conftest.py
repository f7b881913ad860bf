"""Fixtures for the CorVer tests: the embedded tokenizers and a real infini-gram test index.

The index is built by the corpus service's own builder (factrl.harness.services.corpus.build_index)
from a corpus this file writes, with the tiny-llama (Llama-2) tokenizer, and counted by the
real engine with the paper's parameters. Fact documents are separated by filler documents
longer than max_diff_tokens, so the engine's window never reaches a neighbouring fact
document and every count below is exact and hand-checkable:

    Paris AND France           25   (>= 20: +0.1); Paris AND capital AND France: 25
    Einstein AND Ulm            8   (5..19:  0.0)
    Curie AND Warsaw            2   (1..4:  -0.1)
    Mozart AND Tokyo            0   (both occur, never together: -0.2)
    Paris AND founded AND France 0  (RELCHECK's relation query: lowers +0.1 to -0.05)
"""
from __future__ import annotations

import pytest

from tests.corver.fact_index import build_fact_index


def _model_cfg(name: str):
    from factrl.harness.engine.config import compose

    return compose([f"model={name}"]).model


@pytest.fixture(scope="session")
def llama_tokenizer():
    from factrl.harness.services import models

    cfg = _model_cfg("tiny-llama")
    return models.load_tokenizer(models.resolve(cfg), cfg)


@pytest.fixture(scope="session")
def smol_tokenizer():
    from factrl.harness.services import models

    cfg = _model_cfg("smollm2-135m")
    return models.load_tokenizer(models.resolve(cfg), cfg)


@pytest.fixture(scope="session")
def index_dir(tmp_path_factory, llama_tokenizer):
    return build_fact_index(tmp_path_factory.mktemp("corver_corpus"), llama_tokenizer)


@pytest.fixture(scope="session")
def corpus_cfg(index_dir):
    return {"name": "test", "backend": "local", "tokenizer": "tiny-llama", "index_dir": str(index_dir),
            "max_clause_freq": 500000, "max_diff_tokens": 1000, "cache": False}


@pytest.fixture(scope="session")
def counter(corpus_cfg, llama_tokenizer):
    from factrl.harness.services.corpus import open_counter

    with open_counter(corpus_cfg, tokenizer=llama_tokenizer) as c:
        yield c
