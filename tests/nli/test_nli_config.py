"""NLI options are checked at load: typos, misplaced options and unpinned hub ids are errors."""
from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from factrl.harness.core.errors import ConfigError
from factrl.harness.services.nli import DEFAULT_BACKEND, parse_config
from factrl.harness.core.settings import defaults_from_yaml


def test_defaults_and_omegaconf():
    assert parse_config(None).to_dict() == defaults_from_yaml("nli/default.yaml")  # the one place of the defaults
    assert parse_config(None).backend == DEFAULT_BACKEND
    cfg = parse_config(OmegaConf.create({"backend": "hhem", "batch_size": 4, "model": None}))
    assert cfg.model_id == "vectara/hallucination_evaluation_model"
    assert cfg.pinned_revision == "8e4a2e6e96c708cc76c2344f7e4757df2515292c"


@pytest.mark.parametrize("options, message", [
    ({"backend": "hhem", "batchsize": 4}, "did you mean nli.batch_size"),
    ({"backend": "nli"}, "nli.backend='nli' is not valid"),
    ({"backend": "deberta", "max_premise_tokens": 100}, "applies only to nli.backend=hhem"),
    ({"backend": "hhem", "entailment_label": "yes"}, "applies only to nli.backend=deberta"),
    ({"backend": "hhem", "batch_size": 0}, "nli.batch_size=0 must be a positive integer"),
    ({"backend": "hhem", "dtype": "fp8"}, "nli.dtype"),
    ({"backend": "hhem", "device": "gpu"}, "nli.device"),
    ({"model": "some/model"}, "do not apply to backend standin"),
])
def test_bad_options(options, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(options)


def test_unpinned_hub_id_and_revision_on_a_directory(tmp_path):
    from factrl.harness.services.nli import load_nli

    with pytest.raises(ConfigError, match="needs nli.revision"):
        load_nli({"backend": "deberta", "model": "someone/nli"})
    with pytest.raises(ConfigError, match="needs nli.revision"):
        load_nli({"backend": "deberta", "model": "someone/nli", "revision": "main"})
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="local directory"):
        load_nli({"backend": "deberta", "model": str(tmp_path), "revision": "a" * 40})
