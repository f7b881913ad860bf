"""The trainer callbacks of the harness's training runs (split from grpo.py): the per-step JSONL
log, one progress bar instead of TRL's printed dictionaries, the timer's totals at each
checkpoint, and the kill switch the resume tests use."""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

log = logging.getLogger(__name__)


class JsonlLogCallback(TrainerCallback):
    """Appends every TRL log entry (one per logging step) to a JSONL file in the run directory."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and state.is_world_process_zero:  # every process logs the same (gathered) values
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"step": state.global_step, **logs}, default=float) + "\n")


class ProgressBarCallback(TrainerCallback):
    """One tqdm bar over optimizer steps with the reward in its postfix, replacing TRL's
    progress callback, which prints every log dictionary to the console. The full logs go to
    train/log.jsonl (JsonlLogCallback)."""

    def __init__(self, name: str):
        self.name = name
        self.bar = None

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        from tqdm import tqdm

        self.bar = tqdm(total=state.max_steps, initial=state.global_step, desc="training", unit="step")

    def on_step_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.update(state.global_step - self.bar.n)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.bar is not None and logs and "reward" in logs:
            shown = {"reward": logs["reward"], "kl": logs.get("kl")}
            shown.update({k.rsplit("/", 1)[-1]: v for k, v in logs.items()
                          if k in (f"rewards/{self.name}/correct_rate", f"rewards/{self.name}/format_rate")})
            self.bar.set_postfix({k: f"{v:.3g}" for k, v in shown.items() if isinstance(v, (int, float))})

    def on_train_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class TimingsCallback(TrainerCallback):
    """Writes the timer's totals next to each checkpoint, so resumed runs keep their time."""

    def __init__(self, timer: Any, path: Path):
        self.timer, self.path = timer, Path(path)

    def on_save(self, args, state, control, **kwargs):
        if self.timer is not None and state.is_world_process_zero:
            self.timer.write(self.path)


class KillSwitchCallback(TrainerCallback):
    """Test facility: HARNESS_KILL_AT_STEP=N ends the process abruptly (exit 137, as a SIGKILL
    would) when step N+1 is about to start, after step N's checkpoint is on disk. It lets the
    resume test interrupt a real run at a known point; it does nothing when the variable is unset."""

    def __init__(self):
        value = os.environ.get("HARNESS_KILL_AT_STEP")
        self.step = int(value) if value else None

    def on_step_begin(self, args, state, control, **kwargs):
        if self.step is not None and state.global_step >= self.step:
            log.warning("HARNESS_KILL_AT_STEP=%d: killing the process", self.step)
            logging.shutdown()
            os._exit(137)
