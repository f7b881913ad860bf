"""DeBERTa backend on tiny DeBERTa-v2 classifiers: entailment found by label name, or an error."""
from __future__ import annotations

import pytest
import torch

from factrl.harness.core.errors import ConfigError
from factrl.harness.services.nli import load_nli
from factrl.harness.training.components import check_components

PAIRS = [
    ("Paris is the capital of France.", "Paris is a city in France."),
    ("The Eiffel Tower was built in 1889 in Paris , the capital of France .", "The tower was built in 1900."),
    ("Berlin is in Germany.", "Berlin is not in France."),
    ("a", "Paris"),
]


def reference(model_dir, pairs, index):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    out = []
    for premise, hypothesis in pairs:
        inputs = tokenizer(premise, hypothesis, truncation=True, max_length=512, return_tensors="pt")
        with torch.no_grad():
            out.append(torch.softmax(model(**inputs).logits, dim=-1)[0, index].item())
    return out


def test_entailment_at_index_0(deberta_dirs):
    scorer = load_nli({"backend": "deberta", "model": str(deberta_dirs["nli"]), "batch_size": 3})
    expected = reference(deberta_dirs["nli"], PAIRS, 0)
    assert scorer.score(PAIRS) == pytest.approx(expected, abs=1e-5)
    assert max(expected) - min(expected) > 0.05
    entry = scorer.describe()
    assert entry["entailment_index"] == 0 and entry["stand_in"] is True and entry["kind"] == "nli"
    check_components("knowrl", {"nli": entry})


def test_entailment_at_index_2_upper_case(deberta_dirs):
    """Same weights, microsoft's label order: the score must come from class 2, not 0."""
    scorer = load_nli({"backend": "deberta", "model": str(deberta_dirs["mnli"])})
    assert scorer.describe()["entailment_index"] == 2
    got = scorer.score(PAIRS)
    assert got == pytest.approx(reference(deberta_dirs["mnli"], PAIRS, 2), abs=1e-5)
    assert got != pytest.approx(reference(deberta_dirs["mnli"], PAIRS, 0), abs=1e-3)


def test_no_entailment_label_is_an_error(deberta_dirs):
    with pytest.raises(ConfigError, match=r"no label named 'entailment'.*LABEL_0"):
        load_nli({"backend": "deberta", "model": str(deberta_dirs["none"])})


def test_entailment_label_option(deberta_dirs):
    scorer = load_nli({"backend": "deberta", "model": str(deberta_dirs["none"]), "entailment_label": "label_1"})
    assert scorer.describe()["entailment_index"] == 1
    assert scorer.score(PAIRS) == pytest.approx(reference(deberta_dirs["none"], PAIRS, 1), abs=1e-5)


def test_order_restored_and_inputs_truncated(deberta_dirs):
    scorer = load_nli({"backend": "deberta", "model": str(deberta_dirs["nli"]), "batch_size": 2, "max_length": 12})
    long_pair = (" ".join(["paris is the capital of france ."] * 20), "Paris is in France.")
    pairs = PAIRS + [long_pair]
    assert max(len(e["input_ids"]) for e in scorer._encode(pairs)) == 12
    alone = [scorer.score([pair])[0] for pair in pairs]
    assert scorer.score(pairs) == pytest.approx(alone, abs=1e-5)
    assert scorer.stats()["batches"] == len(pairs) + 3


def test_default_hub_id_not_cached():
    from factrl.harness.core.errors import ModelNotFoundError

    with pytest.raises(ModelNotFoundError, match="MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli@6f5cf0a2"):
        load_nli({"backend": "deberta"})
