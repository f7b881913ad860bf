"""eval.hf_shared_prefix: a batch's common prompt prefix prefilled once, the padding after it.

The same logits (float rounding) and greedy tokens as the left-padded batch, on the tiny random
Llama with and without a LoRA adapter and with the fast path; the layout; the fallbacks."""
from __future__ import annotations

import pytest
import torch

from factrl.evals.backends import Decoding, Request, build_backend
from factrl.harness.core.prompts import SYSTEM_PROMPT, format_prompt
from factrl.harness.engine.config import compose
from factrl.harness.services.models import load_model, load_tokenizer, resolve
from factrl.harness.services.models.common_prefix import (full_attention_cache, middle_padded, shared_length,
                                                          shared_prefix_inputs)

pytestmark = pytest.mark.filterwarnings("ignore")

QUESTIONS = ("Who wrote Hamlet?", "Name a river in Spain that flows into the Atlantic Ocean.", "What is 2 + 2?",
             "Which planet is the largest?", "Who painted the ceiling of the Sistine Chapel in Rome?")


@pytest.fixture(scope="module")
def tiny():
    cfg = compose(["model=tiny-llama", "eval=demo", "eval.cache=false"])
    identity = resolve(cfg.model)
    return cfg, identity, load_tokenizer(identity, cfg.model)


def test_the_shared_length_leaves_every_row_a_token_of_its_own():
    assert shared_length([[1, 2, 3, 4], [1, 2, 3, 5, 6]], minimum=2) == 3
    assert shared_length([[1, 2, 3], [1, 2, 3, 4, 5]], minimum=2) == 2   # row 0 keeps its last token
    assert shared_length([[1, 2, 3, 4], [1, 2, 3, 5]], minimum=4) == 0   # under the minimum: nothing shared
    assert shared_length([[1, 2, 3, 4]], minimum=1) == 0                 # one row: nothing to share
    assert shared_length([[7, 2, 3], [1, 2, 3]], minimum=1) == 0


def test_middle_padding_puts_the_pads_after_the_prefix():
    ids, mask = middle_padded([[1, 2, 3, 4, 5], [1, 2, 9]], prefix=2, pad_id=0)
    assert ids.tolist() == [[1, 2, 3, 4, 5], [1, 2, 0, 0, 9]]
    assert mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 0, 0, 1]]
    # the positions generate counts from the mask: the prefix 0..1, then each row's own tokens on
    positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 0)
    assert positions.tolist() == [[0, 1, 2, 3, 4], [0, 1, 0, 0, 2]]


def _rows(tokenizer, cfg):
    return [tokenizer(format_prompt(tokenizer, q, cfg.model, system=SYSTEM_PROMPT),
                      add_special_tokens=False)["input_ids"] for q in QUESTIONS]


def _adapted(model):
    from peft import LoraConfig, get_peft_model

    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"]))
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5, generator=torch.Generator().manual_seed(3))
    return peft_model


def test_the_logits_and_greedy_tokens_equal_the_left_padded_batch(tiny):
    cfg, identity, tokenizer = tiny
    rows = _rows(tokenizer, cfg)
    for model in (load_model(identity, cfg.model, device="cpu"), _adapted(load_model(identity, cfg.model, device="cpu"))):
        model.eval()
        with torch.inference_mode():
            shared = shared_prefix_inputs(model, rows, tokenizer.pad_token_id)
            prefix = shared_length(rows)
            assert prefix >= 16 and shared["past_key_values"].get_seq_length() == prefix
            assert shared["past_key_values"].layers[0].keys.shape[0] == len(rows)
            tokenizer.padding_side = "left"
            padded = tokenizer.pad({"input_ids": rows}, padding=True, return_tensors="pt")
            kwargs = dict(max_new_tokens=10, do_sample=False, output_scores=True, return_dict_in_generate=True,
                          pad_token_id=tokenizer.pad_token_id)
            plain = model.generate(**padded, **kwargs)
            ours = model.generate(**shared, **kwargs)
        width = padded["input_ids"].shape[1]
        assert shared["input_ids"].shape[1] == width
        assert torch.equal(ours.sequences[:, width:], plain.sequences[:, width:])
        for a, b in zip(ours.scores, plain.scores):
            scale = b.abs().max()
            assert (a - b).abs().max() <= 1e-5 * max(1.0, float(scale))


def test_the_backend_decodes_the_same_texts_with_and_without_it(tiny):
    cfg, identity, _ = tiny
    requests = [Request(q, SYSTEM_PROMPT) for q in QUESTIONS]
    model = _adapted(load_model(identity, cfg.model, device="cpu"))
    texts = {}
    for shared in (False, True):
        for fast in (False, True):
            backend = build_backend("hf", identity, cfg.model, Decoding.from_mapping(max_new_tokens=12), batch_size=3,
                                    model=model, tokenizer=None, hf_fast=fast, hf_shared_prefix=shared)
            texts[shared, fast] = [g.text for _, g in sorted(backend.generate(requests))]
    assert len(set(map(tuple, texts.values()))) == 1, texts


def test_no_shared_prefix_where_the_cache_is_not_full_attention():
    from transformers import MistralConfig

    sliding = MistralConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                            num_key_value_heads=1, vocab_size=64, sliding_window=4)
    full = MistralConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=1, vocab_size=64, sliding_window=None)
    assert full_attention_cache(sliding) is None
    assert full_attention_cache(full) is not None


def test_it_is_recorded_in_the_backend_settings(tiny):
    from factrl.evals.provenance import backend_settings
    from factrl.evals.settings import EvalSettings

    cfg = tiny[0]
    on = backend_settings(EvalSettings.from_mapping({"sets": ["demo"], "hf_shared_prefix": True}), cfg, cfg.model)
    off = backend_settings(EvalSettings.from_mapping({"sets": ["demo"], "hf_shared_prefix": False}), cfg, cfg.model)
    assert on == {**off, "hf_shared_prefix": True} and "hf_shared_prefix" not in off


def test_a_model_that_asks_for_its_own_cache_is_left_padded(tiny):
    """A generation config with cache_implementation (static, ...) cannot take the prefilled
    DynamicCache: the backend pads such a model to the left, with the same texts."""
    cfg, identity, _ = tiny
    requests = [Request(q, SYSTEM_PROMPT) for q in QUESTIONS]
    model = load_model(identity, cfg.model, device="cpu")
    texts = []
    for static in (False, True):
        model.generation_config.cache_implementation = "static" if static else None
        backend = build_backend("hf", identity, cfg.model, Decoding.from_mapping(max_new_tokens=8), batch_size=5,
                                model=model, tokenizer=None, hf_fast=False, hf_shared_prefix=True)
        texts.append([g.text for _, g in sorted(backend.generate(requests))])
    assert texts[0] == texts[1]
