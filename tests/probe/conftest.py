"""Fixtures for the probe tests: a real infini-gram index built from the CorVer test corpus
(tests/corver/conftest.py: Paris/France co-occur 25 times, Einstein/Ulm 8, Curie/Warsaw 2),
the tiny-llama tokenizer, a real evidence store for KnowRL, and a small pool."""
from __future__ import annotations

import json

import pytest

from tests.corver.fact_index import build_fact_index
from tests.evidence_fixtures import build_test_store
from tests.knowrl.conftest import ARTICLES

POOL = [
    {"id": "p1", "question": "What is the capital of France?", "answers": ["Paris"], "title": "Paris"},
    {"id": "p2", "question": "Where was Albert Einstein born?", "answers": ["Ulm", "Ulm, Germany"], "title": "Ulm"},
    {"id": "p3", "question": "Where was Marie Curie born?", "answers": ["Warsaw"], "title": "Marie Curie"},
    {"id": "p4", "question": "Which city did Mozart live in?", "answers": ["Vienna"], "title": "Marie Curie"},
    {"id": "p5", "question": "Who discovered polonium with Pierre Curie?", "answers": ["Marie Curie"],
     "title": "Marie Curie"},  # a multi-word gold: the panel's gold_fragment has a fragment to give
]


@pytest.fixture(scope="session")
def llama_tokenizer():
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose

    cfg = compose(["model=tiny-llama"]).model
    return models.load_tokenizer(models.resolve(cfg), cfg)


@pytest.fixture(scope="session")
def index_dir(tmp_path_factory, llama_tokenizer):
    return build_fact_index(tmp_path_factory.mktemp("probe_corpus"), llama_tokenizer)


@pytest.fixture(scope="session")
def corver_overrides(index_dir):
    """`harness probe` overrides for CorVer on the test index (heuristic extractor: tiny-llama's protocol)."""
    return ["method=corver", "model=tiny-llama", f"corpus.index_dir={index_dir}", "corpus.tokenizer=tiny-llama",
            "corpus.cache=false", "corpus.name=test"]


@pytest.fixture(scope="session")
def store_path(tmp_path_factory):
    return build_test_store(tmp_path_factory.mktemp("probe_store"), ARTICLES)


@pytest.fixture(scope="session")
def pool_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("probe_pool") / "pool.json"
    path.write_text(json.dumps(POOL), encoding="utf-8")
    return path
