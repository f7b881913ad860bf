"""`harness run launcher=accelerate|torchrun ...`: re-execute the run under a multi-process launcher.

    harness run launcher=torchrun launcher.num_processes=2 ...
      -> torchrun --standalone --nproc_per_node 2 -m factrl.harness.cli run ... launcher=none
    harness run launcher=accelerate launcher.config=zero2 launcher.num_processes=8 ...
      -> accelerate launch --config_file <configs/accelerate/zero2.yaml> --num_processes 8
             -m factrl.harness.cli run ... launcher=none

Each process then runs `harness run` with `launcher=none`; training is data parallel
(harness/training/distributed.py) and rank 0 alone writes the run directory, evaluates and
records. The launcher settings are left out of the config hash, so the launched run finds the
same run directory as a one-process run of the same config.
"""
from __future__ import annotations

import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import ConfigError

LAUNCHERS = ("none", "accelerate", "torchrun")
ACCELERATE_CONFIGS = ("ddp", "zero2", "zero3")


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
    from .config import compose

    mine, _ = _launcher_overrides(argv)
    if any("," in item.split("=", 1)[-1] for item in mine):
        raise ConfigError("launcher settings cannot be swept (-m); give one launcher per command")
    return compose(mine).launcher


def launch_command(argv: list[str], *, python: str | None = None) -> list[str] | None:
    """The launcher command line that re-runs `harness run argv` in N processes, or None when
    the run is a single process (launcher=none, or already inside a launched process)."""
    if not _launcher_overrides(argv)[0]:
        return None  # the root default is launcher=none: no need to compose anything
    node = launcher_config(argv)
    name = str(node.get("name", "none"))
    if name not in LAUNCHERS:
        raise ConfigError(f"launcher={name!r}: use one of {', '.join(LAUNCHERS)}")
    if name == "none" or "LOCAL_RANK" in os.environ:
        return None
    processes = int(node.get("num_processes", 1))
    if processes < 1:
        raise ConfigError(f"launcher.num_processes={processes} must be >= 1")
    extra = [str(x) for x in (node.get("extra_args") or [])]
    _, rest = _launcher_overrides(argv)
    python = python or sys.executable
    target = ["-m", "factrl.harness.cli", "run", *rest, "launcher=none"]
    if name == "torchrun":
        return [python, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes),
                *extra, *target]
    config = str(node.get("config", "ddp"))
    file = accelerate_config_file(config)
    if config.startswith("zero"):
        import importlib.util

        if importlib.util.find_spec("deepspeed") is None:
            raise ConfigError(f"launcher.config={config} needs DeepSpeed: pip install 'factrl-harness[deepspeed]' "
                              f"(or launcher.config=ddp)")
    port = node.get("main_process_port")
    port_args = ["--main_process_port", str(int(port))] if port not in (None, "") else []
    return [python, "-m", "accelerate.commands.launch", "--config_file", str(file), "--num_processes",
            str(processes), *port_args, *extra, *target]


def maybe_launch(argv: list[str]) -> int | None:
    """Run `harness run argv` under its launcher and return the exit status; None when the run
    should go ahead in this process."""
    command = launch_command(argv)
    if command is None:
        return None
    print(f"harness run: launching {' '.join(command[:command.index('-m', 2)])} ...", file=sys.stderr)
    env = {**os.environ}
    env.setdefault("OMP_NUM_THREADS", "1")  # N processes on one machine: no thread oversubscription
    # No timeout: the launched run is the whole training job; Ctrl-C reaches the launcher.
    return subprocess.run(command, env=env).returncode
