"""The `rlfh` method: registry entry, settings from config (typos refused), configs of
PROTOCOL 4, components, and the one-line errors of build_reward."""
from __future__ import annotations

import pytest

from factrl.harness.config import compose
from factrl.harness.errors import ConfigError
from factrl.harness.method import RunContext
from factrl.methods.rlfh import RLFH, RLFHSettings, settings_component
from factrl.methods.rlfh.settings import CONSTANTS, is_hedge

from .test_reward import judge_cfg


def test_registered_as_a_ppo_method():
    from factrl.harness.registry import get_method

    assert get_method("rlfh") is RLFH and RLFH.algorithm == "ppo"


def test_default_constants_are_the_readme_run():
    s = RLFHSettings.from_mapping(compose(["method=rlfh"]).method)
    assert s.constants == "readme" and s.granularity == "token" and s.evidence_k == 3
    assert s.table.verdict == {"correct": 0.45, "vague": -1.0, "wrong": -1.7}
    assert s.table.info == {5: 1.25, 4: 1.0, 3: 0.75, 2: 0.1, 1: -0.2} and s.table.w_info == 1.2
    assert CONSTANTS["train_sh"].verdict["wrong"] == -1.2 and CONSTANTS["reward_config"].verdict["wrong"] == -2.0


@pytest.mark.parametrize("override, match", [("method.constants=paper", "method.constants='paper'"),
                                             ("method.granularity=word", "method.granularity"),
                                             ("+method.evidence_kk=3", "method.evidence_kk: unknown key")])
def test_bad_settings_are_one_line_config_errors(override, match):
    with pytest.raises(ConfigError, match=match):
        RLFHSettings.from_mapping(compose(["method=rlfh", override]).method)


def test_protocol_configs():
    cfg = compose(["method=rlfh", "model=llama-3.2-3b"])
    assert cfg.train.learning_rate == 5e-7 and cfg.train.beta == 0.01 and cfg.train.ppo.epochs == 4
    assert compose(["method=rlfh", "model=qwen3-4b"]).train.beta == 0.01
    big = compose(["method=rlfh", "model=llama-3.1-8b"])
    assert big.train.beta == 0.05 and big.train.temperature == 0.7
    key = compose(["experiment=rlfh-author-key", "model=llama-3.2-3b"])
    assert key.method.name == "rlfh" and key.train.top_p == 0.9 and key.train.temperature == 1.0
    embedded = compose(["method=rlfh"])  # smollm2-135m: the reference judge, demo evidence
    assert embedded.judge.backend == "reference" and embedded.evidence.name == "demo"


def test_hedges_are_case_insensitive():
    assert is_hedge("I'M SORRY, I cannot say.") and is_hedge("I\u2019m not sure.") and is_hedge("Is it Warsaw?")
    assert not is_hedge("Marie Curie was born in Warsaw.")


def test_build_reward_needs_a_judge_and_components(store_path, tokenizer):
    from tests.knowrl.judge_server import JudgeServer

    cfg = compose(["method=rlfh", "judge=none"])
    ctx = RunContext(config=cfg, tokenizer=tokenizer)
    with pytest.raises(ConfigError, match="method=rlfh needs a judge"):
        RLFH(cfg.method).build_reward(ctx)
    with JudgeServer(default="5") as server:
        cfg = compose(["method=rlfh", "evidence=file", f"evidence.store={store_path}"])
        cfg.judge = judge_cfg(server.url)
        ctx = RunContext(config=cfg, tokenizer=tokenizer)
        reward = RLFH(cfg.method).build_reward(ctx)
        try:
            components = RLFH(cfg.method).components(reward)
        finally:
            ctx.close()
    assert set(components) == {"judge", "evidence", "settings"}
    assert components["settings"]["constants"] == "readme" and components["settings"]["stand_in"] is False
    assert components["settings"]["prompts"] == {"rlfh_extract": "1", "rlfh_verify": "1", "rlfh_assess": "1"}
    assert settings_component(reward)["info_values"]["5"] == 1.25
