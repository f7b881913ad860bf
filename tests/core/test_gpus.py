"""GPU counting without CUDA (harness/engine/run/gpus.py): the one-GPU check of a one-process training run and
the warning for a CPU-only torch on a GPU machine. The device count is faked where the harness
reads it (the device files and CUDA_VISIBLE_DEVICES), nothing else."""
from __future__ import annotations

import logging

import pytest

from factrl.harness.engine.run import gpus
from factrl.harness.engine.config import compose
from factrl.harness.core.errors import ConfigError


@pytest.mark.parametrize("value, physical, expected", [
    ("0,1", 8, 2), ("0", 8, 1), ("", 8, 0), ("-1", 8, 0), ("0,1,9,2", 8, 2),  # stops at the first invalid
    ("1,1", 8, 1), ("GPU-8a1b2c3d-aaaa,GPU-77f00000-bbbb", 8, 2), ("MIG-1234abcd", 1, 1),
    ("0,1,2,3", 2, 2), ("nonsense,0", 8, 0), (" 0 , 1 ", 8, 2),
])
def test_cuda_visible_devices_parse_as_the_cuda_runtime_does(value, physical, expected):
    assert gpus.parse_visible_devices(value, physical) == expected


def test_visible_gpus_use_the_device_files_without_cuda_visible_devices(tmp_path):
    for name in ("nvidia0", "nvidia1", "nvidia2", "nvidiactl", "nvidia-uvm", "nvidia-modeset"):
        (tmp_path / name).touch()
    assert gpus.device_files(tmp_path) == 3  # control and UVM nodes are not GPUs
    assert gpus.device_files(tmp_path / "missing") == 0
    assert gpus.visible_gpus({}, physical=lambda: 3) == 3
    assert gpus.visible_gpus({"CUDA_VISIBLE_DEVICES": "2"}, physical=lambda: 3) == 1


def test_a_one_process_run_with_several_gpus_stops_with_the_two_fixes():
    eight = lambda: 8  # noqa: E731 -- an 8-GPU node
    with pytest.raises(ConfigError) as err:
        gpus.check_one_process("harness run", environ={}, physical=eight)
    message = str(err.value)
    assert "8 GPUs are visible" in message and "nn.DataParallel" in message
    assert "launcher=torchrun launcher.num_processes=8" in message and "CUDA_VISIBLE_DEVICES=0" in message
    assert "\n" not in message
    gpus.check_one_process("harness run", environ={"CUDA_VISIBLE_DEVICES": "3"}, physical=eight)  # one GPU: fine
    gpus.check_one_process("harness run", environ={}, physical=lambda: 1)
    gpus.check_one_process("harness run", environ={}, physical=lambda: 0)  # CPU
    # Inside a launched process each rank uses its own GPU: no check.
    gpus.check_one_process("harness run", environ={"LOCAL_RANK": "0", "RANK": "0", "WORLD_SIZE": "8"}, physical=eight)


def test_harness_run_refuses_before_anything_is_written(tmp_path, monkeypatch):
    """The run stops before its run directory (or CUDA) exists; an evaluation-only method is not refused."""
    from factrl.harness.engine.run import run_task

    for key in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(gpus, "device_files", lambda dev=None: 4)
    cfg = compose(["method=corver", "model=tiny-llama", f"output_dir={tmp_path}", "leaderboard=rundir"])
    with pytest.raises(ConfigError, match="4 GPUs are visible to a one-process run"):
        run_task(cfg)
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith(".")]  # no run directory
    assert not list((tmp_path / ".claims").glob("*.json"))  # the claim was released
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    from factrl.harness.training import engine

    seen = []
    monkeypatch.setattr(engine, "train", lambda *a, **k: seen.append(1) or (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):  # past the check: training starts (stopped right there)
        run_task(cfg)
    assert seen == [1]


def test_cpu_only_torch_on_a_gpu_machine_warns(caplog):
    import torch

    assert gpus.cpu_only_torch() == (torch.version.cuda is None)
    if not gpus.cpu_only_torch():
        pytest.skip("this torch is a CUDA build: the warning cannot show")
    with caplog.at_level(logging.WARNING, logger="factrl.gpus"):
        message = gpus.warn_if_cpu_torch(physical=lambda: 2)
    assert message and "CPU-only build" in message and "2 NVIDIA GPU(s)" in message
    assert "--index-url https://download.pytorch.org/whl/cu" in message
    assert any("CPU-only build" in r.getMessage() for r in caplog.records)
    assert gpus.warn_if_cpu_torch(physical=lambda: 0) is None  # a CPU machine: nothing to say
