"""A sweep (`harness run -m`) exits nonzero when one of its jobs failed, whichever the launcher.

A job's HarnessError is printed as one line and the sweep goes on with its next job
(config.hydra_entry). Under Hydra's basic launcher the jobs run in the submitting process,
which can count them; under submitit (hydra/launcher=local|slurm) they run in processes of
their own, and the submitting process saw every job "complete". So a failing job also writes
`<sweep dir>/.failed/<job number>.json` ({"error", "exit_code", "overrides"}), and the
submitting process, which learns the sweep folder from Hydra's `on_multirun_start` callback
(`SweepStatus`, registered in configs/config.yaml), reads those files when the sweep returns.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback


FAILED_DIR = ".failed"
_sweeps: list[Path] = []  # sweep folders started in this process, newest last


class SweepStatus(Callback):
    """Remembers the sweep folder in the submitting process."""

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        _sweeps.append(Path(str(config.hydra.sweep.dir)))


def record_failure(message: str, exit_code: int) -> None:
    """In a sweep's job: note that it failed (no-op outside a sweep)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return
    hydra = HydraConfig.get()
    if hydra.mode is None or str(hydra.mode.name) != "MULTIRUN":
        return
    folder = Path(str(hydra.sweep.dir)) / FAILED_DIR
    folder.mkdir(parents=True, exist_ok=True)
    data = {"error": message, "exit_code": int(exit_code), "overrides": list(hydra.overrides.task)}
    (folder / f"{hydra.job.num}.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def last_sweep() -> Path | None:
    return _sweeps[-1] if _sweeps else None


def failures(sweep: Path | None) -> list[dict]:
    """The failure records of a sweep folder, by job number."""
    folder = Path(sweep) / FAILED_DIR if sweep is not None else None
    if folder is None or not folder.is_dir():
        return []
    out = []
    for file in sorted(folder.glob("*.json"), key=lambda p: int(p.stem) if p.stem.isdigit() else 0):
        try:
            out.append({"job": file.stem, **json.loads(file.read_text(encoding="utf-8"))})
        except (OSError, ValueError):
            out.append({"job": file.stem, "error": "unreadable failure record", "exit_code": 1})
    return out
