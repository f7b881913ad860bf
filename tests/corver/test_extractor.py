"""Extractor backends: heuristic rules, the sentence cache, and the real generation path of
the `llm` backend (tiny-llama) and the `quco` backend (a tiny random Qwen2 on disk)."""
from __future__ import annotations

import pytest

from factrl.methods.corver.extractor import (PAPER_DECODING, HeuristicExtractor, LLMExtractor, build_extractor,
                                             heuristic_triples)

from .tiny_qwen import build_tiny_qwen


@pytest.mark.parametrize("sentence, expected", [
    ("Paris is the capital of France.", [["Paris", "is the capital of", "France"]]),
    ("Albert Einstein was born in Ulm.", [["Albert Einstein", "was born in", "Ulm"]]),
    ("The Bank of England was founded in 1694.", [["Bank of England", "was founded in", "1694"]]),
    ("Dr. Smith works at U.S. Steel.", [["Dr. Smith", "works at", "U.S. Steel"]]),
    ("George F. Simon married Diane Meyer.", [["George F. Simon", "married", "Diane Meyer"]]),
    ("Mount Everest is very tall.", [["Mount Everest", "is", "very tall"]]),
    ("Let me think about it.", []),
    ("However, the answer is unclear.", []),
    ("", []),
])
def test_heuristic_rules(sentence, expected):
    assert heuristic_triples(sentence) == expected


def test_cache_and_batch_bookkeeping():
    ext = HeuristicExtractor(cache=True, cache_size=100)
    first = ext.extract(["Paris is in France.", "Paris is in France.", "nothing here", ""])
    assert first == [[["Paris", "is in", "France"]]] * 2 + [[], []]
    assert ext.last_stats["sentences"] == 4 and ext.last_stats["extracted"] == 2  # deduplicated, "" skipped
    second = ext.extract(["Paris is in France.", "Ulm is in Germany."])
    assert second[0] == [["Paris", "is in", "France"]]
    assert ext.last_stats["cache_hits"] == 1 and ext.last_stats["extracted"] == 1
    second[0][0][0] = "mutated"  # callers get copies; the cache is not theirs to change
    assert ext.extract(["Paris is in France."])[0][0][0] == "Paris"
    small = HeuristicExtractor(cache=True, cache_size=1)
    small.extract(["A is B.", "C is D."])
    assert len(small._cache) == 1
    off = HeuristicExtractor(cache=False, cache_size=100)
    off.extract(["A is B."])
    off.extract(["A is B."])
    assert off.last_stats["cache_hits"] == 0


def test_unknown_backend_and_missing_model():
    with pytest.raises(ValueError, match="backend"):
        build_extractor({"backend": "spacy"})
    with pytest.raises(ValueError, match="model"):
        build_extractor({"backend": "llm", "model": None})
    assert isinstance(build_extractor({"backend": "heuristic"}), HeuristicExtractor)


def test_quco_hub_id_offline_names_the_way_out(monkeypatch):
    from factrl.harness.core.errors import ModelNotFoundError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFoundError, match="backend=heuristic"):
        build_extractor({"backend": "quco", "model": "ZhishanQ/QuCo-extractor-0.5B-not-cached-here"})


def test_llm_backend_runs_end_to_end_with_tiny_llama():
    """tiny-llama emits noise; the point is that prompting, batching, sampling and parsing run."""
    ext = build_extractor({"backend": "llm", "model": "tiny-llama", "dtype": "float32", "device": "cpu",
                           "max_new_tokens": 6, "batch_size": 2})
    assert isinstance(ext, LLMExtractor) and ext.use_chat  # the embedded Llama-2 template
    sentences = ["Paris is the capital of France.", "Einstein was born in Ulm.", "Short.", "Paris is the capital of France."]
    out = ext.extract(sentences)
    assert len(out) == 4 and out[0] == out[3]
    assert all(isinstance(t, list) for t in out)
    assert ext.last_stats["generated"] == 3 and ext.last_stats["extracted"] == 3  # one prompt per unique sentence
    assert ext.last_stats["generated_tokens"] <= 3 * 6


def test_quco_backend_generation_path_on_a_tiny_qwen2(tmp_path):
    directory = build_tiny_qwen(tmp_path / "tiny-qwen2")
    cfg = {"backend": "quco", "model": str(directory), "dtype": "float32", "device": "cpu", "max_new_tokens": 8,
           "batch_size": 3, "max_context": 4096}
    ext = build_extractor(cfg)
    assert ext.name == "quco" and type(ext.model).__name__ == "Qwen2ForCausalLM"
    gen = ext.generation  # the paper's settings, explicit
    assert (gen.do_sample, gen.temperature, gen.top_p, gen.top_k, gen.repetition_penalty) == (True, 0.7, 0.8, 20, 1.1)
    assert gen.max_new_tokens == 8 and set(gen.eos_token_id) == {ext.tokenizer.convert_tokens_to_ids("<|im_end|>"),
                                                                 ext.tokenizer.convert_tokens_to_ids("<|endoftext|>")}
    prompt = ext.tokenizer.decode(ext.prompt_ids("Paris is in France."))
    assert prompt.startswith("<|im_start|>user\n") and prompt.endswith("entities:\n<|im_end|>\n<|im_start|>assistant\n")
    sentences = [f"Sentence number {i} about Paris." for i in range(5)]
    first = ext.extract(sentences)
    assert len(first) == 5 and ext.last_stats["generated"] == 5
    # Reproducible: a fresh extractor with the same seed samples the same outputs, and the
    # global RNG the policy samples from is left where it was.
    import torch

    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    again = build_extractor(cfg)
    assert again.extract(sentences) == first
    assert torch.rand(1) == before
    # Greedy option and the context limit: an over-long sentence gets no triples, not a crash.
    limit = len(ext.prompt_ids("Paris is in France.")) + cfg["max_new_tokens"] + 16  # the short one fits
    greedy = build_extractor({**cfg, "do_sample": False, "max_context": limit})
    assert greedy.generation.do_sample is False
    long_sentence = "word " * 2000
    out = greedy.extract([long_sentence, "Paris is in France."])
    assert out[0] == [] and greedy.last_stats["overlong"] == 1


def test_paper_decoding_constants():
    assert PAPER_DECODING == {"do_sample": True, "temperature": 0.7, "top_p": 0.8, "top_k": 20,
                              "repetition_penalty": 1.1, "max_new_tokens": 256}
