"""How many CPU threads torch uses for a run (`threads`: auto | N).

torch's OpenMP threads spin while they wait for each other. On an idle machine two threads decode
about 1.5x faster than one; on a machine whose cores are busy with other processes, a spinning
thread waits for a descheduled one at each of the ~2,000 parallel regions of a decode step
(measured on 2 cores under a load of 5: 1.7 s a decode step with 2 threads, 90 ms with 1). `auto`
therefore gives torch the cores the rest of the machine leaves free at the start of the run: the
busy share of all cores over a 0.3 s window (/proc/stat, while this process waits; the load average
would still count a process that ended a minute ago), subtracted from the core count, at least 1.
An explicit `threads=N`, or OMP_NUM_THREADS in the environment, wins. The number of threads changes no result beyond float
rounding; it is logged and recorded in run.json (`threads`).
"""
from __future__ import annotations

import math
import os
from typing import Any

from ...core.errors import ConfigError


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def busy_cores(window_s: float = 0.3) -> float:
    """How many cores other work kept busy over the last `window_s` seconds (this process sleeps)."""
    import time

    def sample() -> tuple[int, int]:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = [int(x) for x in handle.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return sum(fields), idle

    try:
        total0, idle0 = sample()
        time.sleep(window_s)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):  # not Linux: the 1-minute load average
        try:
            return float(os.getloadavg()[0])
        except (AttributeError, OSError):
            return 0.0
    spent = max(total1 - total0, 1)
    return cores() * (1.0 - (idle1 - idle0) / spent)


def choose(setting: Any, *, environ: dict | None = None, load: float | None = None, available: int | None = None
           ) -> tuple[int, str]:
    """(threads, why) for the setting `threads` (auto or a positive number)."""
    environ = os.environ if environ is None else environ
    available = cores() if available is None else int(available)
    if setting not in (None, "auto"):
        try:
            n = int(setting)
        except (TypeError, ValueError):
            n = 0
        if n < 1:
            raise ConfigError(f"threads={setting!r}: give auto or a positive number of threads")
        return n, "threads=" + str(n)
    if environ.get("OMP_NUM_THREADS", "").strip().isdigit() and int(environ["OMP_NUM_THREADS"]) > 0:
        return int(environ["OMP_NUM_THREADS"]), "OMP_NUM_THREADS"
    load = busy_cores() if load is None else float(load)
    free = max(1, min(available, math.floor(available - load + 0.5)))
    return free, f"auto: {available} cores, {load:.1f} busy with other work"


def apply(setting: Any) -> tuple[int, str]:
    """Set torch's intra-op threads for this process; returns (threads, why)."""
    import torch

    n, why = choose(setting)
    torch.set_num_threads(n)
    return n, why
