"""Wall-clock phases of a training run (docs/PROTOCOL.md §7), written to `<run>/timings.json`.

What is timed: initialisation, rollout generation, reward computation (remote judge
waiting included), policy update and saving. What is not: queueing before the process
starts, evaluation, and anything the engine wraps in `timer.excluded(...)`.

Nesting: time is charged to the innermost open phase only, so a `reward` opened inside
`rollout` moves those seconds from rollout to reward and the phases always sum to the total.
`excluded()` stops the charging until it closes, including for phases opened inside it
(evaluation that reuses the generation code stays excluded). The total is the wall time
during which at least one phase was open.

Resume: `Timer(path=...)` loads an existing timings.json and adds to it, so a killed run
that resumes reports the time of every attempt (one entry per attempt under `segments`);
work redone after a kill counts again, since the run really took that time.
With `autosave_s`, the file is rewritten on a phase exit at most every so many seconds, so
a kill loses at most that much time.

    timer = Timer(path=run / "timings.json")
    with timer.phase("init"):
        ...
    with timer.phase("rollout"):
        with timer.phase("reward"):
            ...
    timer.write()
"""
from __future__ import annotations

import datetime as dt
import math
import os
import platform
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from .settings import Settings


SCHEMA = "factrl.timings/1"
_YAML = object()  # a keyword left out: the value of configs/timer/default.yaml


@dataclass(frozen=True)
class TimerSettings(Settings):
    """`timer.*` (configs/timer/default.yaml documents each key)."""

    OWNER = "timer"
    DEFAULTS = "timer/default.yaml"
    RANGES = {"autosave_s": "[0, inf)"}

    enabled: bool
    sync_cuda: bool  # synchronise CUDA at phase boundaries
    autosave_s: float | None  # rewrite timings.json on a phase exit at most this often; None: only write()

PHASES = ("init", "rollout", "reward", "update", "save")
SCOPE = ("docs/PROTOCOL.md §7: initialisation, rollout generation, reward computation (remote waiting included), "
         "policy update and saving; queueing and evaluation excluded")


def _now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _torch_cuda() -> Any:
    """torch.cuda when torch is already imported and CUDA is usable; never imports torch itself.

    The timer must not pay torch's import time (or initialise CUDA) in processes that do
    not train; a training process has imported torch long before its first phase.
    """
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return torch.cuda
    except Exception:  # a broken driver must not break timing
        return None
    return None


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def detect_device() -> dict[str, Any]:
    """{"kind": "cuda"|"cpu", "name", "count"}: what this process trains on."""
    cuda = _torch_cuda()
    if cuda is not None:
        try:
            count = int(cuda.device_count())
            if count > 0:
                return {"kind": "cuda", "name": str(cuda.get_device_name(0)), "count": count}
        except Exception:
            pass
    try:
        cores = len(os.sched_getaffinity(0))  # the cores this process may use, not the host's
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return {"kind": "cpu", "name": _cpu_name(), "count": cores}


def format_hms(seconds: float | None) -> str:
    """`h:mm:ss`, e.g. 6540.4 -> '1:49:00'."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class Timer:
    """Accumulates wall-clock seconds per phase; see the module docstring for the rules.

    path: where `write()` goes by default; an existing file there is loaded and added to.
    sync_cuda: synchronise CUDA at phase boundaries (when torch + CUDA are in use) so
        asynchronous GPU work is charged to the phase that launched it (left out: the YAML's).
    autosave_s: rewrite `path` on a phase exit when this many seconds passed since the
        last write (None: only explicit `write()` calls; left out: the YAML's).
    clock: monotonic seconds; tests pass a fake one.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, sync_cuda: Any = _YAML,
                 autosave_s: Any = _YAML, clock: Callable[[], float] = time.perf_counter,
                 device: dict[str, Any] | None = None):
        defaults = TimerSettings.from_mapping() if _YAML in (sync_cuda, autosave_s) else None
        self.path = Path(path) if path is not None else None
        self.sync_cuda = defaults.sync_cuda if sync_cuda is _YAML else sync_cuda
        self.autosave_s = defaults.autosave_s if autosave_s is _YAML else autosave_s
        self._clock = clock
        self._device = device
        self.steps: int | None = None
        # This attempt's accounting; earlier attempts live in self._base and are only added.
        self._seconds: dict[str, float] = {}
        self._calls: dict[str, int] = {}
        self._excluded: dict[str, float] = {}
        self._stack: list[tuple[str, bool]] = []  # (name, is_excluded) of the open blocks
        self._mark: float | None = None  # clock value since which the innermost block is charged
        self._active_s = 0.0
        self._started_iso: str | None = None
        self._last_write = clock()
        self._base: dict[str, Any] | None = None
        if self.path is not None and self.path.is_file():
            self._base = self._load(self.path)

    @staticmethod
    def _load(path: Path) -> dict[str, Any]:
        import json

        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            from .errors import DataError

            raise DataError(f"{path}: unreadable timings file ({err}); move it away to restart timing.") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            from .errors import DataError

            raise DataError(f"{path}: not a {SCHEMA} file (schema={data.get('schema')!r}); "
                            "move it away to restart timing.")
        return data

    # -- charging -------------------------------------------------------------------------
    def _charge(self, now: float) -> None:
        """Charge the time since the last boundary to the innermost open block."""
        if self._mark is not None and self._stack:
            elapsed = max(0.0, now - self._mark)
            name, excluded = self._charged_to()
            bucket = self._excluded if excluded else self._seconds
            bucket[name] = bucket.get(name, 0.0) + elapsed
            if not excluded:
                self._active_s += elapsed
        self._mark = now

    def _charged_to(self) -> tuple[str, bool]:
        """(name, excluded) of the block now charged: the outermost open exclusion, if any
        (a phase the evaluation reuses, e.g. generation, stays excluded), else the innermost phase."""
        for name, excluded in self._stack:
            if excluded:
                return name, True
        return self._stack[-1][0], False

    def _sync(self) -> None:
        if not self.sync_cuda:
            return
        cuda = _torch_cuda()
        if cuda is not None:
            try:
                if cuda.is_initialized():  # never initialise CUDA just to time it
                    cuda.synchronize()
            except Exception:
                pass

    @contextmanager
    def _block(self, name: str, excluded: bool) -> Iterator[None]:
        if not isinstance(name, str) or not name or not name.replace("_", "").isalnum():
            raise ValueError(f"timer phase names are identifiers such as {', '.join(PHASES)}; got {name!r}")
        self._sync()
        now = self._clock()
        if self._started_iso is None:
            self._started_iso = _now_iso()
        self._charge(now)
        self._stack.append((name, excluded))
        if not self._charged_to()[1]:
            self._calls[name] = self._calls.get(name, 0) + 1
        try:
            yield
        finally:
            self._sync()
            now = self._clock()
            self._charge(now)
            self._stack.pop()
            if not self._stack:
                self._mark = None
            if (not self._stack and self.autosave_s is not None and self.path is not None
                    and now - self._last_write >= self.autosave_s):
                self.write()

    def phase(self, name: str):
        """Context manager timing one phase (one of PHASES; other identifiers are allowed)."""
        return self._block(name, excluded=False)

    def excluded(self, reason: str = "evaluation"):
        """Context manager for time that must not count (e.g. evaluation inside training)."""
        return self._block(reason, excluded=True)

    # -- results --------------------------------------------------------------------------
    @property
    def device(self) -> dict[str, Any]:
        if self._device is None:
            self._device = detect_device()
        return self._device

    def _current_seconds(self) -> tuple[dict[str, float], float]:
        """This attempt's seconds per phase including a block still open (read-only)."""
        seconds, active = dict(self._seconds), self._active_s
        if self._mark is not None and self._stack:
            name, excluded = self._charged_to()
            if not excluded:
                extra = max(0.0, self._clock() - self._mark)
                seconds[name] = seconds.get(name, 0.0) + extra
                active += extra
        return seconds, active

    @property
    def total_s(self) -> float:
        return float(self.to_dict()["total_s"])

    def to_dict(self) -> dict[str, Any]:
        """The timings.json content: earlier attempts plus this one."""
        seconds, active = self._current_seconds()
        base = self._base or {}
        phases: dict[str, dict[str, float | int]] = {}
        names = list(PHASES) + sorted((set(seconds) | set(base.get("phases", {}))) - set(PHASES))
        for name in names:
            prev = base.get("phases", {}).get(name, {})
            phases[name] = {"seconds": round(float(prev.get("seconds", 0.0)) + seconds.get(name, 0.0), 3),
                            "calls": int(prev.get("calls", 0)) + self._calls.get(name, 0)}
        excluded = dict(base.get("excluded_s", {}))
        for name, value in self._excluded.items():
            excluded[name] = round(float(excluded.get(name, 0.0)) + value, 3)
        segments = list(base.get("segments", []))
        if self._started_iso is not None:
            segments.append({"started": self._started_iso, "updated": _now_iso(),
                             "seconds": round(active, 3), "device": self.device})
        total = sum(float(p["seconds"]) for p in phases.values())
        gpu_hours = sum(float(s["seconds"]) * int(s["device"].get("count", 0)) / 3600.0
                        for s in segments if s.get("device", {}).get("kind") == "cuda")
        devices = {(s["device"].get("name"), s["device"].get("count")) for s in segments}
        steps = self.steps if self.steps is not None else base.get("steps")
        from .. import __version__

        return {
            "schema": SCHEMA,
            "scope": SCOPE,
            "phases": phases,
            "total_s": round(total, 3),
            "total_hms": format_hms(total),
            "gpu_hours": round(gpu_hours, 6),
            "device": segments[-1]["device"] if segments else self.device,
            "mixed_devices": len(devices) > 1,
            "attempts": len(segments),
            "segments": segments,
            "excluded_s": excluded,
            "steps": steps,
            "harness_version": __version__,
        }

    def write(self, path: str | os.PathLike | None = None) -> Path:
        """Write timings.json atomically (to `path`, or the path given at construction)."""
        from .rundir import write_json

        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("Timer.write needs a path (none was given to Timer())")
        write_json(target, self.to_dict())
        self._last_write = self._clock()
        return target


class NullTimer(Timer):
    """The Timer API doing nothing, for `timer.enabled: false`; writes no file."""

    def _block(self, name: str, excluded: bool):  # type: ignore[override]
        from contextlib import nullcontext

        return nullcontext()

    def write(self, path: str | os.PathLike | None = None) -> None:  # type: ignore[override]
        return None


def from_config(timer_cfg: Any, path: str | os.PathLike | None) -> Timer:
    """The run's timer from the `timer` config group or its parsed `TimerSettings` (None: the YAML's)."""
    settings = timer_cfg if isinstance(timer_cfg, TimerSettings) else TimerSettings.from_mapping(timer_cfg)
    if not settings.enabled:
        return NullTimer(device={"kind": "none", "name": "", "count": 0})
    return Timer(path, sync_cuda=settings.sync_cuda, autosave_s=settings.autosave_s)
