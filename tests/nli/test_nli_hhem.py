"""HHEM backend on a tiny HHEM-shaped checkpoint, through the real loading paths."""
from __future__ import annotations

import json
import shutil

import pytest
import torch

from factrl.harness.core.errors import ConfigError, ModelNotFoundError
from factrl.harness.services.nli import HHEM_ID, load_nli
from factrl.harness.services.nli.hhem_model import HHEM_PROMPT
from factrl.harness.training.components import check_components

from .tiny_models import build_hhem

PAIRS = [
    ("Paris is the capital of France.", "Paris is a city in France."),
    ("The Eiffel Tower was built in 1889 in Paris , the capital of France , a large country in Europe .",
     "The tower was built in 1900."),
    ("Berlin is in Germany.", "Berlin is not in France."),
    ("The river Seine flows through Paris.", "The Seine flows through Berlin and Germany and Europe."),
    ("a", "Paris"),
]


def reference_scores(model_dir, foundation, pairs):
    """HHEM's predict() one pair at a time (no padding), straight from transformers."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(model_dir, trust_remote_code=True,
                                                               local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(foundation)
    out = []
    for premise, hypothesis in pairs:
        inputs = tokenizer([HHEM_PROMPT.format(text1=premise, text2=hypothesis)], return_tensors="pt")
        with torch.no_grad():
            logits = model.t5(**inputs).logits[:, 0, :]
        out.append(torch.softmax(logits, dim=-1)[0, 1].item())
    return out


def test_harness_and_remote_code_match_hhem_predict(hhem_dir, foundation):
    expected = reference_scores(hhem_dir, foundation, PAIRS)
    for code in ("harness", "remote"):
        scorer = load_nli({"backend": "hhem", "model": str(hhem_dir), "code": code, "batch_size": 2})
        got = scorer.score(PAIRS)
        assert got == pytest.approx(expected, abs=1e-5), code
        assert scorer.stats()["batches"] == 3 and scorer.stats()["pairs"] == len(PAIRS)
    assert max(expected) - min(expected) > 0.1  # the tiny model really discriminates


def test_batching_restores_order_and_ignores_neighbours(hhem_dir):
    scorer = load_nli({"backend": "hhem", "model": str(hhem_dir), "batch_size": 3})
    alone = [scorer.score([pair])[0] for pair in PAIRS]
    assert scorer.score(PAIRS) == pytest.approx(alone, abs=1e-5)
    assert scorer.score(list(reversed(PAIRS))) == pytest.approx(list(reversed(alone)), abs=1e-5)
    assert scorer.score([]) == []


def test_position_zero_is_the_prompt_pad_even_if_the_tokenizer_pads_left(hhem_dir, foundation):
    scorer = load_nli({"backend": "hhem", "model": str(hhem_dir)})
    encodings = scorer._encode(PAIRS)
    assert {e["input_ids"][0] for e in encodings} == {scorer.tokenizer.pad_token_id}
    assert {e["input_ids"][-1] for e in encodings} == {scorer.tokenizer.eos_token_id}
    scorer.tokenizer.padding_side = "left"  # would put padding at position 0 for short pairs
    assert scorer.score(PAIRS) == pytest.approx(reference_scores(hhem_dir, foundation, PAIRS), abs=1e-5)


def test_premise_is_truncated_and_hypothesis_kept(hhem_dir):
    premise = "Paris is the capital of France and a large city in Europe ."
    hypothesis = "The Eiffel Tower was built in 1889 in Paris , the capital of France ."
    short = load_nli({"backend": "hhem", "model": str(hhem_dir), "max_premise_tokens": 4})
    full = load_nli({"backend": "hhem", "model": str(hhem_dir)})
    assert short.score([(premise, hypothesis)]) == pytest.approx(full.score([("Paris is the capital", hypothesis)]))
    assert short.stats()["truncated"] == 1 and full.stats()["truncated"] == 0
    assert short.describe()["max_premise_tokens"] == 4
    assert "hypothesis is never cut" in short.describe()["truncation"]


def test_describe_is_a_stand_in_component_for_a_local_dir(hhem_dir):
    entry = load_nli({"backend": "hhem", "model": str(hhem_dir)}).describe()
    assert entry["kind"] == "nli" and entry["backend"] == "hhem" and entry["stand_in"] is True
    assert HHEM_ID in entry["note"] and len(entry["sha256"]) == 64 and entry["device"] == "cpu"
    check_components("fspo", {"nli": entry})


def test_offline_foundation_hook(tmp_path, hhem_dir, foundation):
    """The real config.json names google/flan-t5-base: nli.foundation points at a local copy."""
    real_layout = build_hhem(tmp_path / "hhem", foundation, recorded_foundation="google/flan-t5-base")
    with pytest.raises(ModelNotFoundError, match="nli.foundation=google/flan-t5-base"):
        load_nli({"backend": "hhem", "model": str(real_layout)})
    scorer = load_nli({"backend": "hhem", "model": str(real_layout), "foundation": str(foundation)})
    assert scorer.score(PAIRS[:2]) == pytest.approx(load_nli({"backend": "hhem", "model": str(hhem_dir)})
                                                    .score(PAIRS[:2]), abs=1e-5)


def test_hub_id_not_cached_is_a_one_line_error():
    with pytest.raises(ModelNotFoundError, match="vectara/hallucination_evaluation_model@8e4a2e6e"):
        load_nli({"backend": "hhem"})


def test_remote_code_only_for_hhem_or_a_local_dir():
    with pytest.raises(ConfigError, match="nli.code=remote"):
        load_nli({"backend": "hhem", "model": "someone/else", "revision": "a" * 40, "code": "remote"})


def test_not_hhem_shaped_or_incomplete_checkpoints_raise(tmp_path, hhem_dir, deberta_dirs):
    with pytest.raises(ConfigError, match="not an HHEM-2.1-shaped checkpoint"):
        load_nli({"backend": "hhem", "model": str(deberta_dirs["nli"])})
    from safetensors.torch import load_file, save_file

    broken = tmp_path / "broken"
    shutil.copytree(hhem_dir, broken)
    weights = {k: v for k, v in load_file(broken / "model.safetensors").items() if "classifier" not in k}
    save_file(weights, broken / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelNotFoundError, match="t5.classifier"):
        load_nli({"backend": "hhem", "model": str(broken)})
    config = json.loads((hhem_dir / "config.json").read_text())
    config["prompt"] = "Premise: {premise} Hypothesis: {hypothesis}"
    bad_prompt = tmp_path / "prompt"
    shutil.copytree(hhem_dir, bad_prompt)
    (bad_prompt / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConfigError, match="text1"):
        load_nli({"backend": "hhem", "model": str(bad_prompt)})


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA message")
def test_cuda_requested_without_cuda(hhem_dir):
    with pytest.raises(ConfigError, match="nli.device=cuda"):
        load_nli({"backend": "hhem", "model": str(hhem_dir), "device": "cuda"})


def test_fields_missing_from_config_json_mean_hhems_class_defaults(tmp_path, hhem_dir, foundation):
    """HHEM's config class has `prompt` / `foundation` as class attributes: without them in
    config.json the checkpoint still means HHEM's template (and flan-t5-base, here local)."""
    bare = tmp_path / "bare"
    shutil.copytree(hhem_dir, bare)
    config = json.loads((bare / "config.json").read_text())
    del config["prompt"], config["foundation"]
    (bare / "config.json").write_text(json.dumps(config))
    scorer = load_nli({"backend": "hhem", "model": str(bare), "foundation": str(foundation)})
    assert scorer.prompt == HHEM_PROMPT
    assert scorer.score(PAIRS) == pytest.approx(reference_scores(hhem_dir, foundation, PAIRS), abs=1e-5)


def reference_scores_released_precision(model_dir, foundation, pairs, device):
    """HHEM's predict() as FSPO's release runs it: bf16 weights on CUDA, under torch.autocast(cuda,
    bf16) (nusnlp/FSPO@7f5e4f9 verl/workers/fsdp_workers.py:931,938,1028)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(model_dir, trust_remote_code=True,
                                                               local_files_only=True)
    model = model.to(torch.bfloat16).to(device).eval()
    tokenizer = AutoTokenizer.from_pretrained(foundation)
    out = []
    with torch.no_grad(), torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        for premise, hypothesis in pairs:
            inputs = tokenizer([HHEM_PROMPT.format(text1=premise, text2=hypothesis)], return_tensors="pt").to(device)
            logits = model.t5(**inputs).logits[:, 0, :]
            out.append(torch.softmax(logits, dim=-1)[0, 1].item())
    return out


def test_released_precision_options_on_cpu_stay_float32_and_say_so(hhem_dir, foundation):
    """dtype auto + autocast bfloat16 (FSPO's setting): on CPU the weights are float32, no autocast
    runs, the scores are the float32 ones, and describe() records it."""
    scorer = load_nli({"backend": "hhem", "model": str(hhem_dir), "device": "cpu", "dtype": "auto",
                       "autocast": "bfloat16"})
    assert next(scorer.model.parameters()).dtype == torch.float32 and scorer.autocast_active is False
    assert scorer.score(PAIRS) == pytest.approx(reference_scores(hhem_dir, foundation, PAIRS), abs=1e-5)
    entry = scorer.describe()
    assert (entry["dtype"], entry["dtype_setting"], entry["autocast"]) == ("float32", "auto", "none")
    assert "CUDA only" in entry["precision_note"]
    plain = load_nli({"backend": "hhem", "model": str(hhem_dir)}).describe()
    assert (plain["dtype"], plain["autocast"]) == ("float32", "none") and "precision_note" not in plain
    with pytest.raises(ConfigError, match="nli.autocast"):
        load_nli({"backend": "hhem", "model": str(hhem_dir), "autocast": "fp16"})


@pytest.mark.skipif(not torch.cuda.is_available(), reason="bf16 autocast runs on CUDA only")
def test_released_precision_on_cuda_is_bf16_weights_under_autocast(hhem_dir, foundation):
    scorer = load_nli({"backend": "hhem", "model": str(hhem_dir), "device": "cuda", "dtype": "auto",
                       "autocast": "bfloat16", "code": "remote"})
    assert next(scorer.model.parameters()).dtype == torch.bfloat16 and scorer.autocast_active is True
    entry = scorer.describe()
    assert (entry["dtype"], entry["autocast"]) == ("bfloat16", "bfloat16") and "precision_note" not in entry
    expected = reference_scores_released_precision(hhem_dir, foundation, PAIRS, "cuda")
    assert scorer.score(PAIRS) == pytest.approx(expected, abs=1e-2)  # bf16: padding may move the last bits
