"""Launchers, Accelerate/DeepSpeed configs and vLLM settings compose and validate on a CPU;
one `harness run launcher=torchrun` end to end (rank 0 records the row)."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest
import yaml

from factrl.harness.engine.config import compose
from factrl.harness.core.config_values import config_hash
from factrl.harness.core.errors import ConfigError, HarnessError
from factrl.harness.engine.run.launcher import ACCELERATE_CONFIGS, accelerate_config_file, launch_command
from factrl.harness.training.vllm_settings import vllm_args
from tests.helpers import harness

NO_DEEPSPEED = importlib.util.find_spec("deepspeed") is None


@pytest.fixture(autouse=True)
def _not_inside_a_launcher(monkeypatch):
    for key in ("LOCAL_RANK", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(key, raising=False)


def test_launcher_group_composes_and_stays_out_of_the_hash():
    base = compose(["model=tiny-llama"])
    assert base.launcher.name == "none"
    for name in ("accelerate", "torchrun"):
        cfg = compose(["model=tiny-llama", f"launcher={name}", "launcher.num_processes=4"])
        assert cfg.launcher.name == name and cfg.launcher.num_processes == 4
        assert config_hash(cfg) == config_hash(base)  # the same run directory as one process
    with pytest.raises(HarnessError, match="unknown launcher 'slurmm'"):
        compose(["launcher=slurmm"])


def test_torchrun_command_reexecutes_the_run_with_launcher_none():
    argv = ["launcher=torchrun", "launcher.num_processes=2", "model=tiny-llama", "train.steps=1"]
    assert launch_command(argv, python="py") == [
        "py", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
        "-m", "factrl.harness.engine.cli", "run", "model=tiny-llama", "train.steps=1", "launcher=none",
        "launcher.timeout_min=60"]  # the processes' process-group timeout travels with them
    assert launch_command(["model=tiny-llama"]) is None
    assert launch_command(["launcher=none", "model=tiny-llama"]) is None


def test_accelerate_command_uses_the_shipped_config(monkeypatch):
    argv = ["launcher=accelerate", "launcher.num_processes=8", "launcher.main_process_port=29611", "method=raw"]
    command = launch_command(argv, python="py")
    assert command[:3] == ["py", "-m", "accelerate.commands.launch"]
    assert command[command.index("--config_file") + 1] == str(accelerate_config_file("ddp"))
    assert command[command.index("--num_processes") + 1] == "8"
    assert command[command.index("--main_process_port") + 1] == "29611"
    assert command[-6:] == ["-m", "factrl.harness.engine.cli", "run", "method=raw", "launcher=none", "launcher.timeout_min=60"]
    monkeypatch.setenv("LOCAL_RANK", "0")  # already a launched process: run here
    assert launch_command(argv) is None


@pytest.mark.parametrize("name", ACCELERATE_CONFIGS)
def test_shipped_accelerate_configs_load_in_accelerate(name):
    from accelerate.commands.config.config_args import ClusterConfig

    file = accelerate_config_file(name)
    config = ClusterConfig.from_yaml_file(str(file))
    data = yaml.safe_load(file.read_text())
    assert config.num_machines == 1 and config.compute_environment.value == "LOCAL_MACHINE"
    if name == "ddp":
        assert config.distributed_type.value == "MULTI_GPU"
    else:
        assert config.distributed_type.value == "DEEPSPEED"
        assert config.deepspeed_config["zero_stage"] == int(name[-1]) == data["deepspeed_config"]["zero_stage"]


@pytest.mark.skipif(not NO_DEEPSPEED, reason="DeepSpeed is installed: the missing-package error cannot show")
def test_zero_configs_without_deepspeed_say_how_to_install_it():
    install = r"launcher.config=zero2 needs DeepSpeed: pip install 'factrl-harness\[deepspeed\]'"
    with pytest.raises(ConfigError, match=install):
        launch_command(["launcher=accelerate", "launcher.config=zero2"])
    with pytest.raises(ConfigError, match="launcher.config='zero4'"):
        launch_command(["launcher=accelerate", "launcher.config=zero4"])


def test_vllm_settings_map_to_grpo_config_fields():
    cfg = compose(["model=tiny-llama", "train.use_vllm=true"])
    args = vllm_args(cfg.train)
    assert args == {"use_vllm": True, "vllm_mode": "colocate",
                    "vllm_max_model_length": cfg.train.max_prompt_length + cfg.train.max_completion_length,
                    "vllm_enable_sleep_mode": True, "vllm_gpu_memory_utilization": 0.3,
                    "vllm_tensor_parallel_size": 1, "vllm_server_base_url": None, "vllm_server_host": "127.0.0.1",
                    "vllm_server_port": 8000, "vllm_server_timeout": 240.0,
                    "vllm_importance_sampling_correction": False, "vllm_importance_sampling_mode": "token_truncate",
                    "vllm_importance_sampling_clip_max": 2.0, "vllm_importance_sampling_clip_min": None}
    server = vllm_args(compose(["train.vllm.mode=server", "train.vllm.server_port=8123",
                                "train.vllm.server_host=10.0.0.5", "train.vllm.server_timeout=30"]).train)
    assert (server["vllm_mode"], server["vllm_server_host"], server["vllm_server_port"],
            server["vllm_server_timeout"], server["vllm_enable_sleep_mode"]) == \
        ("server", "10.0.0.5", 8123, 30.0, False)
    older = vllm_args(compose(["train.vllm_gpu_memory_utilization=0.45"]).train)
    assert older["vllm_gpu_memory_utilization"] == 0.45  # the older key still works
    newer = vllm_args(compose(["train.vllm_gpu_memory_utilization=0.45",
                               "train.vllm.gpu_memory_utilization=0.2"]).train)
    assert newer["vllm_gpu_memory_utilization"] == 0.2
    assert vllm_args(compose(["train.vllm.max_model_length=4096"]).train)["vllm_max_model_length"] == 4096


@pytest.mark.parametrize("override, message", [
    ("train.vllm.mode=remote", "train.vllm.mode='remote'"),
    ("train.vllm.max_model_length=100", "train.vllm.max_model_length=100 is under"),
    ("train.vllm.gpu_memory_utilization=1.5", "train.vllm.gpu_memory_utilization=1.5 is out of range; allowed: (0, 1]"),
    ("train.vllm.server_port=0", "server_port=0"),
    ("+train.vllm.gpu_memory=0.3", "train.vllm.gpu_memory: unknown key"),
    ("train.vllm.importance_sampling_mode=sequence", "train.vllm.importance_sampling_mode='sequence'"),
    ("train.vllm.importance_sampling_clip_min=4.0", "importance_sampling_clip_min=4.0 must be below"),
])
def test_bad_vllm_settings_name_the_field(override, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        vllm_args(compose([override]).train)


def test_grpo_config_receives_the_vllm_settings(tmp_path):
    from factrl.harness.training.args import grpo_args

    cfg = compose(["model=tiny-llama", "train.vllm.max_model_length=3000", "train.vllm.enable_sleep_mode=false",
                   "train.vllm.gpu_memory_utilization=0.25"])
    args = grpo_args(cfg, tmp_path)
    assert (args.use_vllm, args.vllm_mode, args.vllm_max_model_length, args.vllm_enable_sleep_mode,
            args.vllm_gpu_memory_utilization) == (False, "colocate", 3000, False, 0.25)


@pytest.mark.slow
def test_harness_run_under_torchrun_records_one_row(tmp_path):
    """`harness run launcher=torchrun launcher.num_processes=2` on tiny-llama, CorVer, 1 step (~45 s)."""
    store = tmp_path / "lb.sqlite"
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    result = harness("run", "launcher=torchrun", "launcher.num_processes=2", "model=tiny-llama", "method=corver",
                     "train.steps=1", "train.questions_per_step=2", "train.completions_per_question=2",
                     "train.max_completion_length=8", "eval.limit=2", f"output_dir={tmp_path / 'runs'}",
                     f"leaderboard.store={store}", env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    runs = list((tmp_path / "runs").glob("*-corver-tiny-llama-*"))
    assert len(runs) == 1, runs  # one run directory, written by rank 0 only
    info = json.loads((runs[0] / "run.json").read_text())
    assert info["status"] == "finished" and info["world_size"] == 2
    assert info["leaderboard"]["status"] == "recorded" and len(info["leaderboard"]["rows"]) == 1
    assert yaml.safe_load((runs[0] / "config.yaml").read_text())["launcher"]["name"] == "none"
    assert result.stdout.count("run directory:") == 1


def test_trl_objective_defaults_are_run_settings_passed_explicitly(tmp_path):
    """TRL's importance-sampling correction of vLLM rollouts and its KL bias correction change the
    objective; the run's config sets them (and its hash records them), whatever TRL's defaults."""
    from trl import GRPOConfig

    from factrl.harness.training.args import grpo_args

    import torch

    defaults = GRPOConfig(output_dir=str(tmp_path), report_to=[], use_cpu=not torch.cuda.is_available(),
                          bf16=torch.cuda.is_available())
    ours = grpo_args(compose(["model=tiny-llama"]), tmp_path)
    fields = ("vllm_importance_sampling_correction", "vllm_importance_sampling_mode",
              "vllm_importance_sampling_clip_max", "vllm_importance_sampling_clip_min", "use_bias_correction_kl")
    # TRL 1.16 would correct every vLLM run by sequence masking at 3.0 and weigh the KL by the ratio;
    # the defaults are CorVer's release (no correction; when on, TRL 0.23's per-token truncation at 2.0)
    # and no KL weighting, as in every original.
    assert [getattr(defaults, f) for f in fields] == [True, "sequence_mask", 3.0, None, True]
    assert [getattr(ours, f) for f in fields] == [False, "token_truncate", 2.0, None, False]
    changed = compose(["model=tiny-llama", "train.vllm.importance_sampling_mode=sequence_mask",
                       "train.vllm.importance_sampling_clip_max=3.0", "train.vllm.importance_sampling_clip_min=0.5",
                       "train.vllm.importance_sampling_correction=true", "train.kl_bias_correction=true"])
    args = grpo_args(changed, tmp_path)
    assert [getattr(args, f) for f in fields] == [True, "sequence_mask", 3.0, 0.5, True]
    base = config_hash(compose(["model=tiny-llama"]))
    assert config_hash(compose(["model=tiny-llama", "train.vllm.importance_sampling_mode=token_mask"])) != base
    assert config_hash(compose(["model=tiny-llama", "train.kl_bias_correction=true"])) != base
