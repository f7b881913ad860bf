"""Multi-process and DeepSpeed safety on a CPU: the process group's timeout is the harness's
(launcher.timeout_min, not NCCL's 10-minute default), DeepSpeed is refused for PPO and for
methods reading the policy before any model or trainer exists, a sweep under a launcher is
launched once with each job re-executed under the launcher, and the vLLM server's address stays
out of the config hash."""
from __future__ import annotations

import json
import os

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.core.config_values import config_hash
from factrl.harness.core.errors import ConfigError
from factrl.harness.training.distributed import deepspeed_stage, refuse_deepspeed
from tests.distributed.test_data_parallel import _torchrun
from tests.helpers import harness

ZERO3 = {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "3"}


def test_the_process_group_gets_the_configured_timeout(tmp_path):
    _torchrun("tests.distributed.dist_timeout", str(tmp_path), "5400")
    ranks = [json.loads((tmp_path / f"timeout-rank{r}.json").read_text()) for r in range(2)]
    assert [r["timeout_s"] for r in ranks] == [5400.0, 5400.0]
    assert [r["shared"] for r in ranks] == ["from rank 0", "from rank 0"]


def test_launcher_timeout_composes_for_every_launcher():
    for name in ("none", "torchrun", "accelerate"):
        assert compose([f"launcher={name}"]).launcher.timeout_min == 60
    from factrl.harness.training import distributed

    with pytest.raises(ConfigError, match="launcher.timeout_min must be > 0"):
        distributed.configure(0)


def test_deepspeed_is_refused_for_ppo_and_needs_policy_methods():
    from tests.core.toy_policy_training import PolicyToy
    from tests.ppo.toy_ppo import ToyPPO

    assert deepspeed_stage({}) is None and deepspeed_stage(ZERO3) == 3
    with pytest.raises(ConfigError, match="method 'toyppo' \\(PPO\\) trains under launcher.config=ddp .* not "
                                          "launcher.config=zero3"):
        refuse_deepspeed(ToyPPO(None), ZERO3)
    with pytest.raises(ConfigError, match="method 'policytoy' reads the policy in its reward \\(needs_policy\\)"):
        refuse_deepspeed(PolicyToy(None), {**ZERO3, "ACCELERATE_DEEPSPEED_ZERO_STAGE": "2"})
    from factrl.harness.core.registry import get_method

    refuse_deepspeed(get_method("corver")(compose(["method=corver"]).method), ZERO3)  # GRPO without the policy: fine
    refuse_deepspeed(PolicyToy(None), {})  # DDP: fine


def test_the_refusal_comes_before_the_model_and_the_trainer(tmp_path, monkeypatch):
    """engine.train stops before loading weights; PPOTrainer stops before TRL's __init__ (which
    would start a colocated vLLM engine): here TRL would fail on model=None instead."""
    from factrl.harness.services import models
    from factrl.harness.training import engine
    from factrl.harness.training.ppo import PPOSettings, PPOTrainer
    from factrl.harness.training.args import ppo_args
    from tests.core.toy_policy_training import PolicyToy

    for key, value in ZERO3.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("the model was loaded"))
    cfg = compose(["model=tiny-llama"])
    with pytest.raises(ConfigError, match="needs_policy"):
        engine.train(cfg, PolicyToy(None), models.resolve(cfg.model), tmp_path, [])
    monkeypatch.delenv("ACCELERATE_USE_DEEPSPEED")
    settings = PPOSettings.from_config(cfg.train)
    args = ppo_args(cfg, tmp_path, settings)
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "true")
    with pytest.raises(ConfigError, match="PPO methods train under launcher.config=ddp"):
        PPOTrainer(model=None, args=args, ppo=settings)


def test_the_vllm_server_address_is_not_in_the_config_hash():
    base = config_hash(compose(["model=tiny-llama"]))
    moved = compose(["model=tiny-llama", "train.vllm.server_port=8123", "train.vllm.server_host=10.0.0.5",
                     "train.vllm.server_timeout=999", "train.vllm.server_base_url=http://10.0.0.5:8123"])
    assert config_hash(moved) == base
    assert config_hash(compose(["model=tiny-llama", "train.vllm.gpu_memory_utilization=0.5"])) != base
    for key in ("eval_process=fresh", "stage=train", "claim.stale_s=60", "launcher.timeout_min=5"):
        assert config_hash(compose(["model=tiny-llama", key])) == base, key


@pytest.mark.slow  # two jobs, each two processes (~1 min on 2 shared cores)
def test_a_sweep_under_a_launcher_runs_each_job_once_in_n_processes(tmp_path):
    """Before, the launcher re-executed the whole `-m` command in N processes: N copies of the sweep."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    result = harness("run", "-m", "launcher=torchrun", "launcher.num_processes=2", "method=raw", "model=tiny-llama",
                     "eval.limit=2", "seed=1,2", f"output_dir={tmp_path}", "leaderboard=rundir", env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    runs = sorted(tmp_path.glob("*-raw-tiny-llama-*"))
    assert len(runs) == 2, runs
    infos = [json.loads((r / "run.json").read_text()) for r in runs]
    assert sorted(i["seed"] for i in infos) == [1, 2]
    assert all(i["world_size"] == 2 and i["status"] == "finished" and i["attempts"] == 1 for i in infos)
    assert result.stderr.count("harness run: launching") == 2  # once per job
    assert not list((tmp_path / ".claims").glob("*.json"))  # every claim released
