"""`harness run launcher=accelerate|torchrun ...`: re-execute the run under a multi-process launcher.

    harness run launcher=torchrun launcher.num_processes=2 ...
      -> torchrun --standalone --nproc_per_node 2 -m factrl.harness.engine.cli run ... launcher=none
    harness run launcher=accelerate launcher.config=zero2 launcher.num_processes=8 ...
      -> accelerate launch --config_file <configs/accelerate/zero2.yaml> --num_processes 8
             -m factrl.harness.engine.cli run ... launcher=none

Each process then runs `harness run` with `launcher=none`; training is data parallel
(harness/training/distributed.py) and rank 0 alone writes the run directory, evaluates and
records. The launcher settings are left out of the config hash, so the launched run finds the
same run directory as a one-process run of the same config.

The re-execution happens inside the job (`run_job`, called by `harness run`'s task), with the
job's own overrides: a sweep (`-m`) launches each of its jobs under the launcher where the job
runs, so a Slurm job can be multi-GPU (`hydra.launcher.gpus_per_node=N launcher.num_processes=N`)
and the sweep itself is submitted once. The launched processes get `launcher.timeout_min` (the
process-group timeout, harness/training/distributed.py) and the run's claim token
(harness/engine/run/claims.py), so its rank 0 joins the claim this process holds.
"""
from __future__ import annotations

import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from ...core.errors import ConfigError
from .settings import ACCELERATE_CONFIGS, LAUNCHERS, LauncherSettings


def accelerate_config_file(name: str) -> Path:
    """The shipped Accelerate config `configs/accelerate/<name>.yaml`."""
    if name not in ACCELERATE_CONFIGS:
        raise ConfigError(f"launcher.config={name!r}: use one of {', '.join(ACCELERATE_CONFIGS)} "
                          f"(configs/accelerate/)")
    return Path(str(resources.files("factrl.configs").joinpath("accelerate", f"{name}.yaml")))


def _launcher_overrides(argv: list[str]) -> tuple[list[str], list[str]]:
    """(the `launcher` overrides, everything else) of a `harness run` command line."""
    mine, rest = [], []
    for item in argv:
        key = item.split("=", 1)[0].lstrip("+~")
        (mine if key == "launcher" or key.startswith("launcher.") else rest).append(item)
    return mine, rest


def launcher_config(argv: list[str]) -> Any:
    """The composed `launcher` node for a command line (only its launcher overrides are composed,
    so sweep values elsewhere do not matter here)."""
    from ..config import compose

    mine, _ = _launcher_overrides(argv)
    if any("," in item.split("=", 1)[-1] for item in mine):
        raise ConfigError("launcher settings cannot be swept (-m); give one launcher per command")
    return compose(mine).launcher


def launch_command(argv: list[str], *, python: str | None = None) -> list[str] | None:
    """The launcher command line that re-runs `harness run argv` in N processes, or None when
    the run is a single process (launcher=none, or already inside a launched process)."""
    if not _launcher_overrides(argv)[0]:
        return None  # the root default is launcher=none: no need to compose anything
    return command_for(launcher_config(argv), _launcher_overrides(argv)[1], python=python)


def command_for(node: Any, rest: list[str], *, python: str | None = None) -> list[str] | None:
    """The launcher command line for the composed `launcher` node and the run's other overrides,
    or None for one process (launcher=none, or already inside a launched process)."""
    settings = node if isinstance(node, LauncherSettings) else LauncherSettings.from_mapping(node)
    name = settings.name
    if name == "none" or "LOCAL_RANK" in os.environ:
        return None
    processes = settings.num_processes
    extra = [str(x) for x in (settings.extra_args or [])]
    python = python or sys.executable
    timeout = _number(settings.timeout_min)
    target = ["-m", "factrl.harness.engine.cli", "run", *rest, "launcher=none", f"launcher.timeout_min={timeout}"]
    if name == "torchrun":
        return [python, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes),
                *extra, *target]
    config = str(settings.config)
    file = accelerate_config_file(config)
    if config.startswith("zero"):
        import importlib.util

        if importlib.util.find_spec("deepspeed") is None:
            raise ConfigError(f"launcher.config={config} needs DeepSpeed: pip install 'factrl-harness[deepspeed]' "
                              f"(or launcher.config=ddp)")
    port = settings.main_process_port
    port_args = ["--main_process_port", str(port)] if port is not None else []
    return [python, "-m", "accelerate.commands.launch", "--config_file", str(file), "--num_processes",
            str(processes), *port_args, *extra, *target]


def _number(value: float) -> int | float:
    """`60.0` as `60` (the launched command line keeps the form the YAML writes)."""
    return int(value) if float(value).is_integer() else value


def job_overrides() -> list[str]:
    """This Hydra job's own overrides (a sweep's job: its values, not the sweep's lists)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        raise ConfigError("launcher=accelerate|torchrun re-executes `harness run` and needs its command line; "
                          "call it through `harness run`, not with a composed config")
    return [str(o) for o in HydraConfig.get().overrides.task]


def run_job(cfg: Any, overrides: list[str] | None = None, *, claim_token: str | None = None) -> int | None:
    """Re-execute this job under its launcher and return the exit status; None when the job runs
    in this process (launcher=none, or already inside a launched process)."""
    node = LauncherSettings.from_mapping(cfg.get("launcher"))
    if node.name == "none" or "LOCAL_RANK" in os.environ:
        return None
    overrides = job_overrides() if overrides is None else overrides
    command = command_for(node, _launcher_overrides(overrides)[1])
    if command is None:
        return None
    print(f"harness run: launching {' '.join(command[:command.index('-m', 2)])} ...", file=sys.stderr)
    env = {**os.environ}
    env.setdefault("OMP_NUM_THREADS", "1")  # N processes on one machine: no thread oversubscription
    if claim_token:
        from .claims import TOKEN_ENV

        env[TOKEN_ENV] = claim_token
    # No timeout: the launched run is the whole training job; Ctrl-C reaches the launcher.
    return subprocess.run(command, env=env).returncode
