"""Model resolution: embedded offline models, local paths, hub ids, and clear failures."""
from __future__ import annotations

import pytest

from factrl.harness import models
from factrl.harness.config import compose
from factrl.harness.errors import ModelNotFoundError
from factrl.harness.prompts import SYSTEM_PROMPT, format_prompt
from tests.helpers import harness


@pytest.mark.parametrize("name, eos", [("tiny-llama", "</s>"), ("smollm2-135m", "<|im_end|>")])
def test_embedded_models_load_offline_with_fixed_special_tokens(name, eos):
    cfg = compose([f"model={name}"])
    identity = models.resolve(cfg.model)
    assert identity.id == f"embedded:{name}" and len(identity.sha256) == 64
    tokenizer = models.load_tokenizer(identity, cfg.model)
    assert tokenizer.eos_token == eos and tokenizer.pad_token is not None
    assert tokenizer.padding_side == "left"
    prompt = format_prompt(tokenizer, "Who wrote Hamlet?", cfg.model)
    assert SYSTEM_PROMPT in prompt and prompt.rstrip().endswith(("[/INST]", "assistant\n<think>"))
    # A second resolve reuses the converted copy.
    assert models.resolve(cfg.model).path == identity.path


def test_local_path_without_weights_is_a_clear_error(tmp_path):
    cfg = compose([f"model={tmp_path}"])
    with pytest.raises(ModelNotFoundError, match="no config.json"):
        models.resolve(cfg.model)


def test_local_path_loads(tmp_path):
    import shutil

    source = models.resolve(compose(["model=tiny-llama"]).model).path
    shutil.copytree(source, tmp_path / "copy")
    identity = models.resolve(compose([f"model={tmp_path / 'copy'}"]).model)
    assert identity.revision == "local" and identity.path == str(tmp_path / "copy")


def test_uncached_hub_model_says_how_to_get_it():
    cfg = compose(["model=llama-3.2-3b"])
    with pytest.raises(ModelNotFoundError, match="huggingface-cli download meta-llama/Llama-3.2-3B-Instruct"):
        models.resolve(cfg.model)


def test_missing_model_exits_with_one_line(tmp_path):
    result = harness("run", "method=raw", "model=/does/not/exist", f"output_dir={tmp_path}")
    assert result.returncode == 2
    assert "model.path=/does/not/exist" in result.stderr and "Traceback" not in result.stderr
