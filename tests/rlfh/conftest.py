"""Fixtures for the RLFH tests: a real evidence store (SQLite / FTS5, the `words` splitter) holding
articles long enough for RLFH's 64-word sections, the embedded SmolLM2 tokenizer (a real byte-level
BPE), and the pool rows.

Articles: "Marie Curie" (two sections), "Ulm", and the two Wikipedia pages of the reference
vectors' HotpotQA row (tests/reference_vectors/rlfh/annotator.json: "Arthur's Magazine",
"First for Women", their `extra_materials`).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evidence_fixtures import build_test_store

VECTORS = Path(__file__).parents[1] / "reference_vectors" / "rlfh"
_ANNOTATOR = json.loads((VECTORS / "annotator.json").read_text(encoding="utf-8"))["cases"][0]["input"]

CURIE = ("Marie Curie was born in Warsaw. Marie Curie won two Nobel Prizes. She worked in Paris on radium and "
         "polonium with Pierre Curie for many years. She was the first woman to win a Nobel Prize and the first "
         "person to win it twice. Her daughter Irene Joliot-Curie also won a Nobel Prize. She founded the Curie "
         "Institutes in Paris and in Warsaw. She died in 1934 in Passy, France, of aplastic anaemia.")
ARTICLES = [
    {"title": "Marie Curie", "text": CURIE},
    {"title": "Ulm", "text": "Albert Einstein was born in Ulm in 1879. Ulm is a city on the river Danube in Germany. "
                             "The city has the tallest church steeple in the world."},
    *[{"title": t, "text": text} for t, text in zip(_ANNOTATOR["titles"], _ANNOTATOR["extra_materials"])],
]
ROWS = {
    "curie": {"id": "q-curie", "question": "Where was Marie Curie born?", "answers": ["Warsaw"], "title": "Marie Curie"},
    "einstein": {"id": "q-ulm", "question": "Where was Albert Einstein born?", "answers": ["Ulm", "Ulm, Germany"],
                 "title": "Ulm"},
    "nowhere": {"id": "q-none", "question": "Who wrote Hamlet?", "answers": ["Shakespeare"],
                "title": "William Shakespeare"},  # not in the store: no evidence
    "magazine": {"id": "q-mag", "question": _ANNOTATOR["question"], "answers": ["Arthur's Magazine"],
                 "title": ";".join(_ANNOTATOR["titles"])},
}


@pytest.fixture(scope="session")
def store_path(tmp_path_factory) -> Path:
    return build_test_store(tmp_path_factory.mktemp("rlfh_store"), ARTICLES)


@pytest.fixture()
def store(store_path):
    from factrl.harness.services.evidence import open_store

    with open_store(store_path) as opened:
        yield opened


@pytest.fixture(scope="session")
def tokenizer():
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose

    cfg = compose(["model=smollm2-135m"]).model
    return models.load_tokenizer(models.resolve(cfg), cfg)
