"""Fixtures for the KnowRL tests: a real evidence store the tests write (SQLite/FTS5, the
`words` splitter), the lexical NLI stand-in, a tiny DeBERTa-v2 NLI classifier built here
with an `entailment` label, and the embedded tokenizer.

Articles (one short passage each, except Curie's, which has two):
    Marie Curie    "Marie Curie was born in Warsaw. Marie Curie won two Nobel Prizes."
                   + a second passage about Paris and radium
    Ulm            "Albert Einstein was born in Ulm in 1879."
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.evidence_fixtures import build_test_store

ARTICLES = [
    {"title": "Marie Curie", "text": "Marie Curie was born in Warsaw. Marie Curie won two Nobel Prizes. "
                                     "She worked in Paris on radium and polonium with Pierre Curie for many years."},
    {"title": "Ulm", "text": "Albert Einstein was born in Ulm in 1879."},
]
ROWS = {
    "curie": {"id": "q-curie", "question": "Where was Marie Curie born?", "answers": ["Warsaw"],
              "title": "Marie Curie"},
    "einstein": {"id": "q-ulm", "question": "Where was Albert Einstein born?", "answers": ["Ulm", "Ulm, Germany"],
                 "title": "Ulm"},
    "nowhere": {"id": "q-none", "question": "Who wrote Hamlet?", "answers": ["Shakespeare"],
                "title": "William Shakespeare"},  # not in the store: no evidence
}


@pytest.fixture(scope="session")
def store_path(tmp_path_factory) -> Path:
    return build_test_store(tmp_path_factory.mktemp("knowrl_store"), ARTICLES)


@pytest.fixture()
def store(store_path):
    from factrl.harness.services.evidence import open_store

    with open_store(store_path) as opened:
        yield opened


@pytest.fixture()
def standin():
    from factrl.harness.services.nli import load_nli

    return load_nli({"backend": "standin"})


@pytest.fixture(scope="session")
def deberta_dirs(tmp_path_factory):
    from tests.nli.tiny_models import build_deberta

    return {"nli": build_deberta(tmp_path_factory.mktemp("deberta-nli"),
                                 {0: "entailment", 1: "neutral", 2: "contradiction"}),
            "none": build_deberta(tmp_path_factory.mktemp("deberta-none"),
                                  {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})}


@pytest.fixture(scope="session")
def llama_tokenizer():
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose

    cfg = compose(["model=tiny-llama"]).model
    return models.load_tokenizer(models.resolve(cfg), cfg)
