"""SIGTERM as an interrupt: what a Slurm time limit, a preemption or `kill` sends.

Python's default for SIGTERM ends the process on the spot: no `finally`, no cleanups, run.json
left `running`. `raise_on_sigterm` turns the first SIGTERM into `Terminated` (a
KeyboardInterrupt), so the run marks itself `interrupted`, methods close their services, and
the last sealed checkpoint is where a rerun resumes (training/checkpoints.py). A second SIGTERM
ends the process at once, as the default would.
"""
from __future__ import annotations

import signal
import threading


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM; exit status 143 (128 + 15), as a default SIGTERM gives."""

    exit_code = 128 + int(signal.SIGTERM)


def _handler(signum, frame):  # noqa: ARG001
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Terminated("received SIGTERM")


def raise_on_sigterm() -> None:
    """Install the handler (only the main thread may; elsewhere this does nothing)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _handler)
