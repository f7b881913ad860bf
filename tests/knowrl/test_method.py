"""The KnowRL method: registry entry, build-time checks (each a one-line error naming the
setting and the fix, before training) and the recorded components."""
from __future__ import annotations

import socket

import pytest

from factrl.harness.core.errors import ConfigError, DataError
from factrl.harness.core.method import RunContext
from factrl.harness.training.components import check_components, stand_in_names
from factrl.methods.knowrl import METHOD

from .conftest import ROWS
from .judge_server import JudgeServer


def compose(*overrides):
    from factrl.harness.engine.config import compose as hydra_compose

    return hydra_compose(["method=knowrl", "model=tiny-llama", *overrides])


def services(url, store_path, *extra):
    return ("judge=openai", f"judge.base_url={url}", "judge.model=judge-test", "judge.api_key_env=null",
            "judge.cache=null", "judge.max_retries=0", "judge.timeout=2", "evidence=file",
            f"evidence.store={store_path}", *extra)


def build(cfg, rows=None, run_dir=None):
    ctx = RunContext(config=cfg, pool=list(rows or [ROWS["curie"]]), run_dir=run_dir)
    return METHOD(cfg.method).build_reward(ctx), ctx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_registered_with_the_paper_defaults():
    from factrl.harness.core.registry import get_method

    assert get_method("knowrl") is METHOD and METHOD.algorithm == "grpo"
    paper = compose("model=llama-3.2-3b").method
    assert paper.nli.backend == "deberta" and paper.nli.model is None  # the pinned MoritzLaurer id
    train = compose("model=llama-3.2-3b").train  # docs/PROTOCOL.md §4: GRPO, 16, 1e-5 / 0.001
    assert (train.completions_per_question, train.learning_rate, train.beta, train.temperature) == (16, 1e-5, 0.001, 1.0)
    assert compose().method.nli.backend == "standin"  # the embedded models' protocol file
    cfg = compose()
    assert cfg.judge.backend == "reference" and cfg.evidence.name == "demo"  # the no-override run's services


def test_builds_and_records_components(store_path, tmp_path):
    with JudgeServer() as server:
        reward, ctx = build(compose(*services(server.url, store_path)), run_dir=tmp_path)
        components = check_components("knowrl", METHOD(None).components(reward))
        assert set(components) == {"judge", "nli", "evidence", "retrieval", "settings"}
        assert stand_in_names(components) == ["nli", "retrieval"]
        assert components["settings"]["threshold"] == 0.3 and components["settings"]["k"] == 5
        assert components["settings"]["grade_prompt"] == "knowrl_grade@1"
        assert components["settings"]["facts_prompt"] == "knowrl_atomic_facts@1"
        assert set(components["judge"]["prompts"]) == {"knowrl_grade", "knowrl_atomic_facts"}  # registered up front
        ctx.close()  # the registered cleanups close the judge (and write its stats) and the store
    assert (tmp_path / "judge_stats.json").is_file()


def test_pool_row_without_title_is_an_error(store_path):
    with JudgeServer() as server:
        cfg = compose(*services(server.url, store_path))
        untitled = {**ROWS["curie"], "title": ""}
        with pytest.raises(DataError, match=r"^pool=\S+: 1 of 2 rows have no `title`.*method=knowrl.*method.require_title=false"):
            build(cfg, rows=[ROWS["einstein"], untitled])
        reward, ctx = build(compose(*services(server.url, store_path, "method.require_title=false")),
                            rows=[untitled])
        out = reward(completions=["<think>Marie Curie was born in Warsaw.</think><answer>Paris</answer>"],
                     completion_ids=[[1, 2]], rows=[untitled])
        # grade "C" (the server's default) is a refusal: no fact term; the row costs nothing else
        assert out.token_returns == [[2.0, 2.0]]
        ctx.close()


def test_bad_services_stop_before_training(store_path, tmp_path, deberta_dirs):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ConfigError, match=r"judge.base_url=http://127.0.0.1:\d+/v1 does not answer"):
        build(compose(*services(dead, store_path)))
    with JudgeServer(models=("other-model",)) as server:
        with pytest.raises(ConfigError, match=r"judge.model='judge-test' is not served.*other-model"):
            build(compose(*services(server.url, store_path)))
    with JudgeServer() as server:
        with pytest.raises(DataError, match=r"harness evidence build"):
            build(compose(*services(server.url, tmp_path / "missing.sqlite3")))
        with pytest.raises(ConfigError, match=r"no label named 'entailment'.*nli.entailment_label"):
            build(compose(*services(server.url, store_path, "method.nli.backend=deberta",
                                    f"method.nli.model={deberta_dirs['none']}")))
        with pytest.raises(ConfigError, match=r"method.variant"):
            build(compose(*services(server.url, store_path, "method.variant=v2")))
        with pytest.raises(ConfigError, match=r"method.retrieval"):
            build(compose(*services(server.url, store_path, "method.retrieval=gtr")))
    with pytest.raises(ConfigError, match=r"needs a judge"):
        build(compose("judge=none", "evidence=file", f"evidence.store={store_path}"))


def test_a_dead_judge_stops_training_before_the_model_loads(store_path, tmp_path, monkeypatch):
    """engine.train builds the reward before it loads the weights, so a reward-side bad input
    costs no model load (minutes for a 3B model on a GPU)."""
    from factrl.harness.services import models
    from factrl.harness.training import engine

    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("the model was loaded"))
    cfg = compose(*services(f"http://127.0.0.1:{free_port()}/v1", store_path))
    with pytest.raises(ConfigError, match=r"judge.base_url=http://127.0.0.1:\d+/v1 does not answer"):
        engine.train(cfg, METHOD(cfg.method), models.resolve(cfg.model), tmp_path / "run", [ROWS["curie"]])


@pytest.mark.slow  # two CLI processes (about 20 s on 2 shared cores)
def test_cli_lists_it_and_prints_one_line_errors(store_path, tmp_path):
    from tests.helpers import harness

    listed = harness("methods")
    assert any(line.startswith("knowrl ") and "grpo" in line for line in listed.stdout.splitlines())
    dead = f"http://127.0.0.1:{free_port()}/v1"
    result = harness("run", *services(dead, store_path), "method=knowrl", "model=tiny-llama", f"output_dir={tmp_path}",
                     "leaderboard.enabled=false", "eval.limit=1")
    assert result.returncode == 2
    error = [line for line in result.stderr.splitlines() if line.startswith("harness run: error:")]
    assert len(error) == 1 and "judge.base_url" in error[0]
