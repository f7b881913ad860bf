"""train.max_prompt_length is enforced on chat prompts, measured in the template's tokens."""
from __future__ import annotations

import pytest

from factrl.harness.core.errors import ConfigError
from factrl.harness.core.prompts import chat_messages
from factrl.harness.training.engine import _check_max_prompt_length, prompt_token_count


@pytest.fixture(scope="module")
def smol():
    """The embedded SmolLM2 tokenizer (ChatML template), with chat prompts (no response prefix)."""
    from factrl.harness.services import models
    from factrl.harness.engine.config import compose

    cfg = compose(["model=smollm2-135m", "model.response_prefix=null", "model.demonstration=false"])
    return models.load_tokenizer(models.resolve(cfg.model), cfg.model), cfg.model


def test_long_chat_prompt_is_refused(smol):
    tokenizer, model_cfg = smol
    question = "Which river flows past the old stone walls of the town? " * 30
    prompt = chat_messages(question, model_cfg)
    n = prompt_token_count(tokenizer, prompt)
    # The real count of the templated prompt, not the 2 keys of a BatchEncoding.
    assert n == len(tokenizer(tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True),
                              add_special_tokens=False)["input_ids"])
    assert n > 128
    with pytest.raises(ConfigError, match=rf"{n} tokens, over train.max_prompt_length=128"):
        _check_max_prompt_length(tokenizer, {"prompt": [chat_messages("Who?", model_cfg), prompt]}, 128)
    _check_max_prompt_length(tokenizer, {"prompt": [prompt]}, n)  # exactly at the limit passes


def test_text_prompts_are_counted_too(smol):
    tokenizer, _ = smol
    text = "word " * 300
    assert prompt_token_count(tokenizer, text) >= 300
    with pytest.raises(ConfigError, match="train.max_prompt_length=64"):
        _check_max_prompt_length(tokenizer, {"prompt": [text]}, 64)
