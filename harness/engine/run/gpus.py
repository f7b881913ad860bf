"""GPUs this process will see, counted before torch initialises CUDA, and the checks that need it.

Counting must not initialise CUDA: vLLM and DataLoader workers fork, and a CUDA runtime set up
in the parent breaks the children. So nothing here calls into the driver: the count is the
`CUDA_VISIBLE_DEVICES` list when it is set (parsed as the CUDA runtime does: the list ends at the
first entry that is not a valid device, and an empty value hides every device), else the NVIDIA
device files (/dev/nvidia0, /dev/nvidia1, ...), which container runtimes and Slurm's cgroups
limit to the devices a job was given.

- `check_one_process(...)`: a one-process training run (launcher=none) with more than one visible
  GPU stops with a one-line error. transformers' Trainer would wrap the model in nn.DataParallel
  (`TrainingArguments.n_gpu` is the device count when no launcher is set), which TRL's
  GRPOTrainer refuses at init, after the model is loaded.
- `warn_if_cpu_torch(...)`: a CPU-only torch build on a machine with NVIDIA GPUs trains on the CPU
  without a word (`use_cpu` and `bf16: auto` follow torch.cuda.is_available()); say so loudly.
"""
from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Callable, Mapping

from ...core.errors import ConfigError

log = logging.getLogger("factrl.gpus")

_DEVICE_FILE = re.compile(r"^nvidia(\d+)$")
_LAUNCHER_VARIABLES = ("LOCAL_RANK", "RANK")


def device_files(dev: Path = Path("/dev")) -> int:
    """NVIDIA GPUs by their device files (no driver call); 0 where there are none."""
    try:
        return sum(1 for p in dev.iterdir() if _DEVICE_FILE.match(p.name))
    except OSError:
        return 0


def parse_visible_devices(value: str, physical: int) -> int:
    """How many devices a `CUDA_VISIBLE_DEVICES` value exposes on a machine with `physical` GPUs.

    Indices and GPU-/MIG- UUIDs count until the first invalid entry (a negative or out-of-range
    index, a repeat, anything else), as in the CUDA runtime; "" and "-1" expose none. UUIDs are
    not checked against the hardware (that needs the driver), so the count is capped at `physical`.
    """
    seen: set[str] = set()
    count = 0
    for raw in value.split(","):
        item = raw.strip()
        if item in seen:
            break
        if item.isdigit():
            if int(item) >= physical:
                break
        elif not item.startswith(("GPU-", "MIG-")) or len(item) <= 4:
            break
        seen.add(item)
        count += 1
    return min(count, physical)


def visible_gpus(environ: Mapping[str, str] | None = None, physical: Callable[[], int] | None = None) -> int:
    """GPUs a CUDA program started with `environ` (default: this process's) would see;
    `physical` counts the machine's GPUs (default: `device_files`)."""
    environ = os.environ if environ is None else environ
    total = int((physical or device_files)())
    value = environ.get("CUDA_VISIBLE_DEVICES")
    return total if value is None else parse_visible_devices(value, total)


def launched(environ: Mapping[str, str] | None = None) -> bool:
    """True inside a process started by torchrun or `accelerate launch` (they set LOCAL_RANK / RANK)."""
    environ = os.environ if environ is None else environ
    return any(key in environ for key in _LAUNCHER_VARIABLES) or int(environ.get("WORLD_SIZE", "1") or 1) > 1


def check_one_process(what: str = "harness run", environ: Mapping[str, str] | None = None,
                      physical: Callable[[], int] | None = None) -> None:
    """Refuse a one-process training run that would see several GPUs (module docstring)."""
    environ = os.environ if environ is None else environ
    if launched(environ):
        return
    count = visible_gpus(environ, physical)
    if count > 1:
        raise ConfigError(f"{what}: {count} GPUs are visible to a one-process run (launcher=none), and "
                          f"transformers would wrap the model in nn.DataParallel, which TRL refuses; train on all "
                          f"of them with launcher=torchrun launcher.num_processes={count}, or on one with "
                          f"CUDA_VISIBLE_DEVICES=0")


def cpu_only_torch() -> bool:
    """True for a torch build without CUDA (or ROCm) support. Reads build metadata only."""
    import torch

    return torch.version.cuda is None and getattr(torch.version, "hip", None) is None


def warn_if_cpu_torch(physical: Callable[[], int] | None = None) -> str | None:
    """Log (and return) a warning when a CPU-only torch runs on a machine with NVIDIA GPUs."""
    gpus = int((physical or device_files)())
    if gpus == 0 or not cpu_only_torch():
        return None
    import torch

    message = (f"torch {torch.__version__} is a CPU-only build, but this machine has {gpus} NVIDIA GPU(s): "
               f"everything runs on the CPU. Install the CUDA build into this environment, e.g. "
               f"pip install --force-reinstall torch=={torch.__version__.split('+')[0]} "
               f"--index-url https://download.pytorch.org/whl/cu128")
    log.warning("WARNING: %s", message)
    return message
