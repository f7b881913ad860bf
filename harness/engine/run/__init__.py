"""`harness run`: one run, CLI -> config -> Method -> trainer -> evaluator -> leaderboard.

The orchestration is orchestrate.py (`run_task`); cli.py is the command, settings.py the run's
settings groups, and the other modules the parts a run uses (claims, launcher, eval_process,
gpus, signals, threads).
"""
from .orchestrate import run_task


__all__ = ["run_task"]
