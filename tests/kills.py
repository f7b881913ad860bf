"""Kill a real training process at a moment of its checkpoint save, as kill -9 or a Slurm
time limit would: start it, poll its run directory, send the signal as soon as a condition
holds. Conditions name a step's folder or file whether the save stages it
(`tmp-checkpoint-N/checkpoint-N/`) or writes it in place (`checkpoint-N/`), so the same test
runs against either layout."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

from tests.helpers import REPO

TEST_ENV = {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def step_folder(train: Path, step: int) -> Callable[[], bool]:
    """True once checkpoint `step` has a folder of either kind (the first moment of its save)."""
    return lambda: (train / f"checkpoint-{step}").exists() or (train / f"tmp-checkpoint-{step}").exists()


def step_file(train: Path, step: int, name: str) -> Callable[[], bool]:
    """True once file `name` of checkpoint `step` exists, staged or in place."""
    places = (train / f"checkpoint-{step}", train / f"tmp-checkpoint-{step}" / f"checkpoint-{step}")
    return lambda: any((place / name).exists() for place in places)


def published(train: Path, step: int) -> Callable[[], bool]:
    """True once `checkpoint-<step>/` exists under its final name."""
    return lambda: (train / f"checkpoint-{step}").exists()


def run_until(cmd: list[str], log: Path, when: Callable[[], bool] | None = None, *, sig: int = signal.SIGKILL,
              env: dict | None = None, timeout: float = 600) -> int:
    """Run `cmd` (stdout and stderr appended to `log`); send `sig` as soon as `when()` holds.
    Returns the exit status (-9 after SIGKILL; a process that ended first returns its own)."""
    full_env = {**os.environ, **TEST_ENV, "PYTHONPATH": str(REPO), **(env or {})}
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env=full_env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            if when is not None and when():
                proc.send_signal(sig)
                when = None
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise TimeoutError(f"{cmd} ran past {timeout} s")
            time.sleep(0.0005)
        return proc.returncode
