"""Config composition: every option of every group, protocol defaults, overrides, errors."""
from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from factrl.harness.engine.config import compose, group_options, prepare_overrides
from factrl.harness.core.config_values import config_hash, redact
from factrl.harness.core.errors import HarnessError
from tests.helpers import harness

GROUPS = ["method", "model", "pool", "eval", "train", "lora", "corpus", "evidence", "judge", "timer", "leaderboard",
          "experiment"]


@pytest.mark.parametrize("group", GROUPS)
def test_every_option_of_every_group_composes(group):
    options = group_options(group)
    assert options, f"configs/{group}/ has no options"
    for option in options:
        overrides = [f"{group}={option}"]
        if group == "model" and option == "custom":
            overrides.append("model.id=org/name")
        if (group, option) in (("pool", "file"), ("experiment", "corver-a4")):
            overrides.append("pool.path=/tmp/pool.json")
        if (group, option) == ("corpus", "wikipedia"):
            overrides.append("corpus.index_dir=/data/enwiki-llama2")
        if (group, option) == ("evidence", "file"):
            overrides.append("evidence.store=/data/wiki.sqlite3")
        if (group, option) == ("judge", "openai"):
            overrides += ["judge.model=gpt-4o-mini", "judge.base_url=http://127.0.0.1:8000/v1"]
        cfg = compose(overrides)
        # Resolving catches broken interpolations; ??? values must be filled above.
        OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)


def test_embedded_default_is_cpu_scale_and_offline():
    cfg = compose([])
    assert cfg.model.name == "smollm2-135m" and cfg.model.source == "embedded"
    assert cfg.pool.name == "demo" and cfg.eval.name == "demo" and cfg.corpus.name == "demo"
    assert cfg.seed == 42 and cfg.train.seed == 42
    assert cfg.train.steps <= 10 and cfg.train.max_completion_length <= 128


def test_paper_models_get_protocol_defaults():
    cfg = compose(["model=llama-3.2-3b"])
    assert (cfg.train.steps, cfg.train.questions_per_step, cfg.train.completions_per_question) == (100, 3, 16)
    assert cfg.train.max_completion_length == 1000 and cfg.model.decoding.max_new_tokens == 1000
    assert (cfg.lora.r, cfg.lora.alpha, cfg.lora.dropout, cfg.lora.bias) == (128, 256, 0.0, "none")
    assert len(cfg.lora.target_modules) == 7
    assert compose(["model=qwen3-4b"]).train.questions_per_step == 4
    assert compose(["model=qwen3-4b"]).model.decoding.temperature == 0.6
    assert compose(["model=llama-3.1-8b"]).model.decoding.repetition_penalty == 1.02


def test_small_models_get_protocol_anchor_counts():
    # docs/PROTOCOL.md §4: about 1,000 (Llama-3.2-3B) and 800 (Qwen3-4B) mastered anchors; others none.
    for pool in ("demo", "file"):
        assert compose(["model=llama-3.2-3b", f"pool={pool}"]).pool.filter.anchors == 1000
        assert compose(["model=qwen3-4b", f"pool={pool}"]).pool.filter.anchors == 800
    assert compose(["model=llama-3.1-8b"]).pool.filter.anchors == 0
    assert compose(["model=qwen3-4b", "pool.filter.anchors=5"]).pool.filter.anchors == 5


def test_corver_protocol_and_ablations():
    assert (compose(["model=llama-3.1-8b"]).train.beta, compose(["model=llama-3.1-8b"]).method.lambda_j) == (0.003, 2.0)
    assert compose(["model=qwen3-4b"]).train.beta == 0.01
    assert compose(["model=llama-3.2-3b"]).train.beta == 0.001
    assert compose(["model=llama-3.2-3b"]).method.extractor.backend == "quco"
    assert compose([]).method.extractor.backend == "heuristic"  # offline embedded default
    assert compose(["experiment=corver-a1"]).method.lambda_c == 0.0
    assert compose(["experiment=corver-a2"]).method.lambda_j == 0.0
    assert compose(["experiment=corver-a3"]).method.assignment == "sentence_mean"
    assert compose(["experiment=corver-relcheck"]).method.aggregation == "relcheck"
    assert compose(["experiment=corver-alpha0-0.3"]).method.alphas[0] == -0.3


def test_command_line_overrides_beat_protocol_files():
    cfg = compose(["model=qwen3-4b", "train.questions_per_step=7"])
    assert cfg.train.questions_per_step == 7


def test_any_hub_id_or_local_path_maps_to_custom_model():
    assert prepare_overrides(["model=org/name"]) == ["model=custom", "model.id=org/name", "model.name=name"]
    assert prepare_overrides(["model=/data/m/"])[:2] == ["model=custom", "model.path=/data/m/"]
    assert prepare_overrides(["model=tiny-llama"]) == ["model=tiny-llama"]


def test_unknown_option_and_typo_raise_clear_errors():
    with pytest.raises(HarnessError, match="unknown model 'nope'.*Valid: custom, llama-3.1-8b"):
        compose(["model=nope"])
    with pytest.raises(HarnessError, match="Did you mean 'tiny-llama'"):
        compose(["model=tiny-lama"])
    with pytest.raises(HarnessError, match="stepz"):
        compose(["train.stepz=3"])


def _with(cfg, key: str, value: str):
    """cfg plus a key no YAML option has (as a config file could carry one)."""
    cfg = cfg.copy()
    OmegaConf.set_struct(cfg, False)
    OmegaConf.update(cfg, key, value, force_add=True)
    return cfg


def test_secrets_are_redacted_and_do_not_change_the_hash():
    base = compose(["judge=openai", "judge.api_key_env=OPENAI_API_KEY"])
    cfg = _with(base, "judge.api_key", "sk-secret-123")
    plain = redact(cfg)
    assert plain["judge"]["api_key"] == "***REDACTED***"
    assert plain["judge"]["api_key_env"] == "OPENAI_API_KEY"
    assert config_hash(cfg) == config_hash(_with(base, "judge.api_key", "sk-other"))
    assert config_hash(cfg) != config_hash(compose(["seed=1"]))


@pytest.mark.parametrize("override", ["judge.api_key=sk-test-SECRET", "+judge.api_key=sk-test-SECRET",
                                      "++judge.token=sk-test-SECRET"])
def test_a_secret_on_the_command_line_is_refused_without_echoing_it(override, capsys, tmp_path):
    from factrl.harness.engine.cli import main

    # Outputs under tmp_path: a harness that took the override would go on and run.
    run = ["run", "method=raw", "model=tiny-llama", f"output_dir={tmp_path}", "leaderboard=rundir", "eval.limit=1"]
    for command in (run, ["judge", "check", "judge=none"]):
        assert main([*command, override]) == 2
        out, err = capsys.readouterr()
        key = override.lstrip("+").split("=")[0]
        assert "sk-test-SECRET" not in out + err
        assert err.strip().splitlines() == [
            f"harness {command[0]}: error: {key}=...: secrets are not taken on the command line (shell history "
            f"and process lists keep them); export the key in an environment variable and pass its name, e.g. "
            f"judge.api_key_env=OPENAI_API_KEY."]
    assert compose(["judge=openai", "judge.api_key_env=MY_KEY"]).judge.api_key_env == "MY_KEY"  # the variable's name is fine


@pytest.mark.parametrize("args, expected", [
    (["run", "model=nope"], "unknown model 'nope'"),
    (["run", "train.stepz=3"], "stepz"),
    (["run", "method=nope"], "unknown method 'nope'"),
    (["run", "-m", "method=raw,nope"], "unknown method 'nope'"),
    (["nope"], "unknown command"),
])
def test_cli_errors_are_one_clear_message(args, expected):
    result = harness(*args)
    assert result.returncode != 0
    assert expected in result.stderr
    assert "Traceback" not in result.stderr


def test_cfg_job_prints_composed_config():
    result = harness("run", "--cfg", "job", "model=tiny-llama")
    assert result.returncode == 0, result.stderr
    assert "tiny-llama" in result.stdout and "questions_per_step" in result.stdout
