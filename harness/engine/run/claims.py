"""Claim files: one holder per run at a time, across processes, jobs and machines.

`harness grid` relaunches every cell that is not finished, so without a claim a rerun of the
grid while its Slurm jobs are pending or running would start a second job on the same run
directory (both resume it and write into each other's checkpoints). A claim says "this run is
being worked on": `<output_dir>/.claims/<method>-<model>-<hash>.json` (the run directory's own
key, so a pending job that has no directory yet can be claimed too), holding

    {"token", "state": "pending" | "running", "job_id", "host", "pid", "started",
     "heartbeat": <unix time>, "stale_after_s"}

How it is safe on a network file system without flock: the file is created with O_CREAT |
O_EXCL (atomic on local file systems and NFSv3+), and every later write goes to a temporary file
renamed over it (atomic). The holder rewrites `heartbeat` every `heartbeat_s` seconds; a claim
whose heartbeat is older than its `stale_after_s` belongs to a holder that died (killed job,
lost node; on the holder's own machine a running claim whose process is gone is stale at once)
and may be taken over: it is renamed away first, and if the renamed file turns out to
hold a newer claim than the stale one (another taker won), it is linked back. Clocks of
different nodes only need to agree to well within `stale_after_s` (minutes).

- `harness run` claims its run before opening the directory, keeps the heartbeat going in a
  thread, and deletes the claim when it ends (finished or failed). A run whose claim another
  holder keeps fresh stops with a one-line error naming the holder.
- `harness grid` writes `pending` claims at submission (long `stale_after_s`, since a job may
  wait in the queue for hours) and skips cells with a fresh claim of another holder unless
  `--relaunch`. The jobs it starts carry its token (HARNESS_CLAIM_TOKEN) and take the pending
  claim over; processes a launcher starts for one run carry the run's token and join its claim.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.errors import HarnessError
from ...core.rundir import atomic_write

log = logging.getLogger("factrl.claims")

CLAIMS_DIR = ".claims"
TOKEN_ENV = "HARNESS_CLAIM_TOKEN"


class ClaimedError(HarnessError):
    """The run is claimed by another live holder."""


def claim_path(cfg: Any, kind: str = "run") -> Path:
    """Where the claim of `cfg`'s run lives (same key as its run directory, rundir.run_key)."""
    from ...core.rundir import run_key

    return Path(cfg.output_dir) / CLAIMS_DIR / f"{run_key(cfg, kind)}.json"  # the composed root key


def job_id(environ: dict | None = None) -> str | None:
    """The scheduler's id of this job (Slurm array task as ARRAY_TASK), or None outside one."""
    env = os.environ if environ is None else environ
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        return f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    return env.get("SLURM_JOB_ID") or None


def read(path: Path) -> dict | None:
    """The claim's content; None when there is no claim; {} while it is being created (empty)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def age(path: Path, info: dict, now: float | None = None) -> float:
    """Seconds since the claim's last heartbeat (or since the file was written, when unreadable)."""
    now = time.time() if now is None else now
    beat = info.get("heartbeat")
    if not isinstance(beat, (int, float)):
        try:
            beat = Path(path).stat().st_mtime
        except OSError:
            return float("inf")
    return max(0.0, now - float(beat))


def _dead_here(info: dict) -> bool:
    """A running claim of a process on this machine that no longer exists (a pending claim is the
    grid's, whose jobs wait in the scheduler's queue whether the grid lives or not)."""
    if info.get("state") != "running" or info.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(info.get("pid")), 0)
    except ProcessLookupError:
        return True
    except (OSError, TypeError, ValueError):
        return False
    return False


def is_fresh(path: Path, info: dict, default_stale_s: float, now: float | None = None) -> bool:
    """True while the holder keeps the claim alive: heartbeat younger than its stale_after_s, and
    (on this machine) the process still there."""
    if _dead_here(info):
        return False
    return age(path, info, now) < float(info.get("stale_after_s") or default_stale_s)


def describe(path: Path, info: dict) -> str:
    """One line about a claim's holder, for errors and the grid table."""
    job = f"job {info['job_id']}" if info.get("job_id") else "no job id"
    return (f"{info.get('state', '?')} ({job}, host {info.get('host', '?')}, pid {info.get('pid', '?')}, "
            f"heartbeat {age(path, info):.0f} s ago)")


def _write_atomic(path: Path, data: dict) -> None:
    atomic_write(path, json.dumps(data, indent=1) + "\n")  # the one writer: whole files, mode 0644


@dataclass
class Claim:
    """A held (or joined) claim; `release()` ends the heartbeat and deletes the file if it is ours."""

    path: Path
    info: dict
    owned: bool
    heartbeat_s: float  # claim.heartbeat_s
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def token(self) -> str:
        return str(self.info["token"])

    def _mine(self, current: dict | None) -> bool:
        keys = ("token", "host", "pid", "state")
        return bool(current) and all(current.get(k) == self.info.get(k) for k in keys)

    def beat(self) -> bool:
        """Refresh the heartbeat; False (and no write) when the claim is no longer ours."""
        current = read(self.path)
        if not self._mine(current):
            return False
        self.info["heartbeat"] = time.time()
        _write_atomic(self.path, self.info)
        return True

    def start(self) -> "Claim":
        if self.owned and self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"claim-heartbeat {self.path.name}", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                if not self.beat():
                    current = read(self.path) or {}
                    if current.get("token") == self.token:
                        # the grid's pending claim, taken over by the job it launched: a handover
                        log.debug("claim %s: handed over to %s", self.path, describe(self.path, current))
                    else:
                        log.warning("claim %s was taken over by another holder; this process no longer holds it",
                                    self.path)
                    return
            except OSError as err:  # a network file system hiccup: try again at the next beat
                log.warning("claim %s: heartbeat failed (%s)", self.path, err)

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.owned and self._mine(read(self.path)):
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> "Claim":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _new_info(token: str, state: str, stale_after_s: float) -> dict:
    now = time.time()
    return {"token": token, "state": state, "job_id": job_id(), "host": socket.gethostname(), "pid": os.getpid(),
            "started": now, "heartbeat": now, "stale_after_s": float(stale_after_s)}


def _take_stale(path: Path, stale: dict) -> None:
    """Move a stale claim out of the way; put it back if what was moved is a newer claim."""
    aside = path.with_name(f".{path.name}.stale-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return  # someone else moved it first
    moved = read(aside) or {}
    if moved.get("token") != stale.get("token") or moved.get("heartbeat") != stale.get("heartbeat"):
        try:
            os.link(aside, path)  # a fresh claim of another taker: restore it (fails if a third exists)
        except OSError:
            pass
    aside.unlink(missing_ok=True)


def acquire(path: Path, *, state: str = "running", stale_after_s: float | None = None,
            heartbeat_s: float | None = None, token: str | None = None, what: str = "run") -> Claim:
    """Claim `path` (module docstring) and start its heartbeat; ClaimedError when another live
    holder has it. With the token of an existing claim: a `pending` one is taken over, a
    `running` one is joined (no heartbeat, never deleted by this process). `stale_after_s` and
    `heartbeat_s` left out: claim.stale_s and claim.heartbeat_s of configs/config.yaml."""
    if stale_after_s is None or heartbeat_s is None:
        from .settings import ClaimSettings

        defaults = ClaimSettings.from_mapping()
        stale_after_s = defaults.stale_s if stale_after_s is None else stale_after_s
        heartbeat_s = defaults.heartbeat_s if heartbeat_s is None else heartbeat_s
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    token = token or os.environ.get(TOKEN_ENV) or uuid.uuid4().hex
    for _ in range(5):
        info = _new_info(token, state, stale_after_s)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            current = read(path)
            if current is None:
                continue  # released meanwhile
            if current.get("token") == token:
                if current.get("state") == "pending" or state == "pending":
                    _write_atomic(path, info)  # our grid's pending claim: this job holds it now
                    return Claim(path, info, True, heartbeat_s).start()
                return Claim(path, current, owned=False, heartbeat_s=heartbeat_s)
            # An empty file is a claim being written, unless it is old (its creator crashed).
            fresh = age(path, current) < 60 if current == {} else is_fresh(path, current, stale_after_s)
            if fresh:
                raise ClaimedError(f"{what} is claimed by another process: {describe(path, current)}; it is pending "
                                   f"or running. Wait for it, or delete {path} if that holder is gone.")
            log.warning("taking over the stale claim %s: %s", path, describe(path, current))
            _take_stale(path, current)
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(info, indent=1) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        return Claim(path, info, True, heartbeat_s).start()
    raise ClaimedError(f"{what}: could not claim {path} (it changed hands repeatedly); try again")


def holder(path: Path, default_stale_s: float, token: str | None = None) -> dict | None:
    """The fresh claim of another holder on `path` (for the grid), else None."""
    current = read(path)
    if current is None or (token is not None and current.get("token") == token):
        return None
    return current if (current == {} or is_fresh(path, current, default_stale_s)) else None
