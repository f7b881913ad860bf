"""The FoRAG method: registry entry, configs (docs/PROTOCOL.md §4 settings and both allocations),
build-time checks (one-line errors naming the setting and the fix) and the recorded components."""
from __future__ import annotations

import pytest

from factrl.harness.core.errors import ConfigError, DataError
from factrl.harness.core.method import RunContext
from factrl.harness.training.components import check_components, stand_in_names
from factrl.methods.forag import METHOD
from tests.knowrl.judge_server import JudgeServer

from .conftest import ROWS


def compose(*overrides):
    from factrl.harness.engine.config import compose as hydra_compose

    return hydra_compose(["method=forag", "model=tiny-llama", *overrides])


def services(url, store_path, *extra):
    return ("judge=openai", f"judge.base_url={url}", "judge.model=judge-test", "judge.api_key_env=null",
            "judge.cache=null", "judge.max_retries=0", "judge.timeout=2", "evidence=file",
            f"evidence.store={store_path}", *extra)


def build(cfg, tokenizer, rows=None, run_dir=None):
    ctx = RunContext(config=cfg, tokenizer=tokenizer, pool=list(rows or [ROWS["curie"]]),
                     run_dir=run_dir)
    return METHOD(cfg.method).build_reward(ctx), ctx


def test_registered_with_the_protocol_settings():
    from factrl.harness.core.registry import get_method

    assert get_method("forag") is METHOD and METHOD.algorithm == "ppo"
    train = compose("model=llama-3.2-3b").train  # docs/PROTOCOL.md §4: PPO, 5e-7 / 0.02, T 1.0; 4 epochs
    assert (train.learning_rate, train.beta, train.temperature, train.ppo.epochs) == (5e-7, 0.02, 1.0, 4)
    assert (train.questions_per_step, train.completions_per_question) == (3, 16)  # initial = shared
    adjusted = compose("model=llama-3.2-3b", "experiment=forag-adjusted").train
    assert (adjusted.questions_per_step, adjusted.completions_per_question) == (4, 1)
    initial = compose("model=qwen3-4b", "experiment=forag-initial").train
    assert (initial.questions_per_step, initial.completions_per_question) == (4, 16)
    from factrl.harness.engine.config import compose as hydra_compose

    alone = hydra_compose(["experiment=forag-adjusted", "model=llama-3.2-3b"])  # the experiment picks the method
    assert (alone.method.name, alone.train.learning_rate, alone.train.completions_per_question) == ("forag", 5e-7, 1)
    cfg = compose()
    assert cfg.judge.backend == "reference" and cfg.evidence.name == "demo"  # the no-override run's services


def test_builds_and_records_components(store_path, tmp_path, tokenizer):
    with JudgeServer() as server:
        reward, ctx = build(compose(*services(server.url, store_path)), tokenizer, run_dir=tmp_path)
        components = check_components("forag", METHOD(None).components(reward))
        assert set(components) == {"judge", "evidence", "settings"} and stand_in_names(components) == []
        s = components["settings"]
        assert (s["aggregation"], s["placement"], s["k"], s["correctness_term"]) == ("mean", "sentence_end", 5, False)
        assert (s["decompose_prompt"], s["verify_prompt"]) == ("forag_decompose@2", "forag_verify@2")
        assert (s["dedupe_statements"], s["max_rewarded_statements"], s["guarded"]) == (False, None, False)
        assert (s["fidelity"], s["judge_failure"]) == ("reconstructed", "no_signal")
        assert [d["setting"] for d in s["differences"]] == ["generator", "reward_model", "evidence"]
        # the judge component lists both prompts, their version and source, before any call
        prompts = components["judge"]["prompts"]
        assert {name: (p["version"], p["source"]) for name, p in prompts.items()} == {
            "forag_decompose": ("2", "harness design"), "forag_verify": ("2", "harness design")}
        ctx.close()  # the registered cleanups close the judge (and write its stats) and the store
    assert (tmp_path / "judge_stats.json").is_file()


def test_guards_are_plain_settings(store_path, tokenizer):
    """`method.dedupe_statements=true method.max_rewarded_statements=3` from the command line:
    recorded in the settings component, listed as differences, bad values one-line errors."""
    with JudgeServer() as server:
        cfg = compose(*services(server.url, store_path, "method.dedupe_statements=true",
                                "method.max_rewarded_statements=3"))
        reward, ctx = build(cfg, tokenizer)
        s = METHOD(None).components(reward)["settings"]
        assert (s["dedupe_statements"], s["max_rewarded_statements"], s["guarded"]) == (True, 3, True)
        assert "guarded" in s["label"]
        assert [d["setting"] for d in s["differences"]][-2:] == ["dedupe_statements", "max_rewarded_statements"]
        ctx.close()
        with pytest.raises(ConfigError, match=r"method.max_rewarded_statements=-1 must be >= 0"):
            build(compose(*services(server.url, store_path, "method.max_rewarded_statements=-1")), tokenizer)


def test_reference_judge_is_registered_with_the_store(store_path, tokenizer):
    """The embedded models' default judge=reference answers both prompts (no ConfigError for a
    missing reference answer) and reads the run's store."""
    reward, ctx = build(compose("evidence=file", f"evidence.store={store_path}"), tokenizer)
    judge = reward.judge.describe()
    assert judge["backend"] == "reference" and set(judge["prompts"]) == {"forag_decompose", "forag_verify"}
    assert judge["evidence"] == reward.store.describe()["label"]
    ctx.close()


def test_pool_titles(store_path, tokenizer):
    untitled = {**ROWS["curie"], "title": ""}
    with JudgeServer() as server:
        with pytest.raises(DataError, match=r"none of its 1 rows has a `title`"):
            build(compose(*services(server.url, store_path)), tokenizer, rows=[untitled])
        with pytest.raises(DataError, match=r"1 of 2 rows have no `title`.*method.require_title=false"):
            build(compose(*services(server.url, store_path, "method.require_title=true")), tokenizer,
                  rows=[ROWS["curie"], untitled])
        reward, ctx = build(compose(*services(server.url, store_path)), tokenizer, rows=[ROWS["curie"], untitled])
        out = reward(completions=["Marie Curie was born in Warsaw."], completion_ids=[[1, 2]], rows=[untitled])
        assert out.token_returns == [None] and out.diagnostics["no_evidence"] == 1.0
        ctx.close()


def test_bad_settings_and_services_stop_before_training(store_path, tokenizer):
    with JudgeServer() as server:
        for override, field in [("method.placement=everywhere", "method.placement"),
                                ("method.aggregation=max", "method.aggregation"),
                                ("+method.palcement=spread", "did you mean method.placement")]:
            with pytest.raises(ConfigError, match=field):
                build(compose(*services(server.url, store_path, override)), tokenizer)
    with pytest.raises(ConfigError, match=r"needs a judge"):
        build(compose("judge=none", "evidence=file", f"evidence.store={store_path}"), tokenizer)
    with pytest.raises(ConfigError, match=r"policy tokenizer"):
        build(compose(), None)
