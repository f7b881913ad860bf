"""`nli.code: harness` (the default HHEM implementation) against vectara's released HHEM code.

tests/reference_vectors/hhem/predict.json holds what vectara's `HHEMv2ForSequenceClassification.predict`
(hub commit 8e4a2e6, run with transformers 4.57.1) gave on a tiny random checkpoint of HHEM's
architecture that the same code built and saved (tests/reference_vectors/hhem/tiny/). The harness
loads those files with its own classes on transformers 5 and must give the same token ids and scores,
one pair at a time (as FSPO calls it) and in batches.
"""
from __future__ import annotations

import json

import pytest

from factrl.harness.services.nli import load_nli
from tests.helpers import REPO

HERE = REPO / "tests" / "reference_vectors" / "hhem"
VECTOR = json.loads((HERE / "predict.json").read_text())
CASE = VECTOR["cases"][0]
PAIRS = [tuple(pair) for pair in CASE["input"]["pairs"]]


def _scorer(batch_size: int):
    return load_nli({"backend": "hhem", "model": str(HERE / CASE["input"]["checkpoint"]), "code": "harness",
                     "foundation": str(HERE / CASE["input"]["foundation"]), "batch_size": batch_size,
                     "device": "cpu", "dtype": "float32"})


def test_the_prompt_tokenises_as_vectaras_predict_does():
    scorer = _scorer(batch_size=8)
    assert [e["input_ids"] for e in scorer._encode(PAIRS)] == CASE["output"]["input_ids"]


@pytest.mark.parametrize("batch_size", [1, 4])
def test_harness_scores_equal_vectaras_predict(batch_size):
    scores = _scorer(batch_size).score(PAIRS)
    assert scores == pytest.approx(CASE["output"]["one_at_a_time"], abs=1e-5)
    assert scores == pytest.approx(CASE["output"]["batched"], abs=1e-5)


def test_the_vector_discriminates():
    """The checkpoint's scores straddle FSPO's 0.5 threshold, so a misread head or position shows."""
    scores = CASE["output"]["one_at_a_time"]
    assert min(scores) < 0.1 and max(scores) > 0.9 and any(0.5 < s < 0.7 for s in scores)
