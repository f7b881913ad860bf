"""The `rlfh` method: registry entry, settings from config (typos refused), configs of docs/PROTOCOL.md §4 and
of the release (judge decoding, tries), components, and the one-line errors of build_reward."""
from __future__ import annotations

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.core.errors import ConfigError
from factrl.harness.core.method import RunContext
from factrl.methods.rlfh import RLFH, RLFHSettings, settings_component
from factrl.methods.rlfh.settings import CONSTANTS

from .test_reward import judge_cfg


def test_registered_as_a_ppo_method():
    from factrl.harness.core.registry import get_method

    assert get_method("rlfh") is RLFH and RLFH.algorithm == "ppo" and RLFH.version == "2"


def test_defaults_are_the_released_run():
    s = RLFHSettings.from_mapping(compose(["method=rlfh", "model=llama-3.2-3b"]).method)
    assert (s.constants, s.granularity, s.max_secs, s.max_words_per_sec, s.tries) == ("train_sh", "token", 3, 64, 4)
    assert (s.parser, s.decoding, s.judge_failure, s.gold_material, s.drop_hedges) == (
        "released", "released", "no_signal", True, True)
    assert (s.dedupe_statements, s.max_rewarded_statements, s.guarded) == (False, None, False)
    assert s.table.verdict == {"correct": 0.3, "vague": -0.8, "wrong": -1.2}
    assert s.table.info == {5: 1.3, 4: 1.2, 3: 1.1, 2: 1.0, 1: -0.1} and s.table.w_info == 1.0
    assert CONSTANTS["readme"].w_info == 1.2 and CONSTANTS["reward_config"].verdict["wrong"] == -2.0


@pytest.mark.parametrize("override, match", [("method.constants=paper", "method.constants='paper'"),
                                             ("method.granularity=word", "method.granularity"),
                                             ("method.judge_failure=vague", "method.judge_failure"),
                                             ("method.max_rewarded_statements=-1", "max_rewarded_statements"),
                                             ("method.tries=0", "method.tries=0 must be >= 1"),
                                             ("+method.evidence_k=3", "method.evidence_k: unknown key")])
def test_bad_settings_are_one_line_config_errors(override, match):
    with pytest.raises(ConfigError, match=match):
        RLFHSettings.from_mapping(compose(["method=rlfh", override]).method)


def test_protocol_configs():
    cfg = compose(["method=rlfh", "model=llama-3.2-3b", "judge=openai"])
    assert cfg.train.learning_rate == 5e-7 and cfg.train.beta == 0.01 and cfg.train.ppo.epochs == 4
    assert cfg.judge.max_reasks == 0 and cfg.judge.paper_model == "Qwen/Qwen3.8-Flash-Next-FP8"
    assert cfg.method.tries == 4  # the release's fresh requests replace the client's re-asks
    assert compose(["method=rlfh", "model=qwen3-4b"]).train.beta == 0.01
    big = compose(["method=rlfh", "model=llama-3.1-8b"])
    assert big.train.beta == 0.05 and big.train.temperature == 0.7
    key = compose(["experiment=rlfh-author-key", "model=llama-3.2-3b"])
    assert key.method.name == "rlfh" and key.train.top_p == 0.9 and key.train.temperature == 1.0
    embedded = compose(["method=rlfh"])  # smollm2-135m: the reference judge, demo evidence
    assert embedded.judge.backend == "reference" and embedded.evidence.name == "demo"
    assert embedded.method.tries == 1 and compose(["method=rlfh", "model=tiny-llama"]).method.tries == 1


def test_build_reward_needs_a_judge_and_components(store_path, tokenizer):
    from .scripted_judge import RLFHJudge

    cfg = compose(["method=rlfh", "judge=none"])
    ctx = RunContext(config=cfg, tokenizer=tokenizer)
    with pytest.raises(ConfigError, match="method=rlfh needs a judge"):
        RLFH(cfg.method).build_reward(ctx)
    with RLFHJudge() as server:
        cfg = compose(["method=rlfh", "evidence=file", f"evidence.store={store_path}", "method.max_rewarded_statements=3"])
        cfg.judge = judge_cfg(server.url)
        ctx = RunContext(config=cfg, tokenizer=tokenizer)
        reward = RLFH(cfg.method).build_reward(ctx)
        try:
            components = RLFH(cfg.method).components(reward)
        finally:
            ctx.close()
    assert set(components) == {"judge", "evidence", "settings"}
    settings = components["settings"]
    assert settings["constants"] == "train_sh" and settings["stand_in"] is False
    assert settings["max_rewarded_statements"] == 3 and settings["guarded"] is True and "(guarded)" in settings["label"]
    assert {k: v["version"] for k, v in settings["prompts"].items()} == {
        "rlfh_extract": "2", "rlfh_verify": "2", "rlfh_assess": "2"}
    assert settings["prompts"]["rlfh_extract"]["decoding"] == {"temperature": 1.0, "top_p": 1.0, "max_tokens": 4096}
    chosen = {d["setting"]: (d["original"], d["ours"]) for d in settings["differences"]}
    assert chosen["judge_failure"] == ("released", "no_signal") and chosen["max_rewarded_statements"] == (None, 3)
    assert "material blocks" in chosen and "constants" not in chosen
    assert {k: v["version"] for k, v in components["judge"]["prompts"].items()} == {
        "rlfh_extract": "2", "rlfh_verify": "2", "rlfh_assess": "2"}
    assert settings_component(reward)["info_values"]["5"] == 1.3
