"""Run directories: where a run writes everything, and how a rerun finds it again.

Layout of `<output_dir>/<date>-<method>-<model>-<hash>/` (hash = config_hash of the
resolved config, so rerunning the same command finds the same directory and resumes):

    config.yaml          resolved config, secrets redacted
    run.json             identity and status: run_id, kind, method, model, config_hash,
                         harness version, git commit, started/finished, status; the reward's
                         `components` and `stand_ins` ({} and [] for evaluation-only runs)
    run.log              the log of every attempt, appended
    timings.json         training phases (harness.core.timer), when the run trains
    train/               checkpoints (checkpoint-N/), the final adapter (adapter/), log.jsonl and
                         reward_records.jsonl (cut back to the checkpoint's step on resume),
                         components.json (Method.components of the reward), README.md
                         (the harness's card, also in adapter/: training/model_card.py)
    eval/<set>/          generations.jsonl, samples.jsonl, metrics.json (see evals/README.md)
    metrics.json         summary over sets: {"schema", "sets": {name: metrics}, "macro": {...},
                         "components", "stand_ins"}
    .space-reserve       64 KiB set aside while the run works: on a full disk it is freed so that
                         run.json can still say the run failed and why

Every file of the harness that a reader (a resuming run, a web server) may open while it is
written goes through `atomic_write` (content) or `atomic_path` (a file or folder built by
another writer, then swapped in): a kill leaves the old file or the new one, never half.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from omegaconf import DictConfig, OmegaConf

from .. import __version__
from .config_values import config_hash, to_plain


log = logging.getLogger("factrl")


def atomic_write(path: str | os.PathLike, data: str | bytes | Callable[[IO], Any], *, mode: int = 0o644,
                 encoding: str = "utf-8") -> Path:
    """Write `data` to `path` atomically: a temp file beside it, then a rename, so a reader never
    sees half a file and a kill leaves the old one. `data`: text, bytes, or a function that
    writes to the open (text) handle. The file gets `mode` (0o644: readable by a web server, as
    a published page must be; the temp file's own 0600 never reaches the result)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        binary = isinstance(data, (bytes, bytearray))
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": encoding})) as handle:
            if callable(data):
                data(handle)
            else:
                handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temp path beside `path` to build a file or folder in (an SQLite store, a model
    directory); swapped in when the block ends without an error, removed otherwise."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    _remove(tmp)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        _remove(tmp)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (`atomic_write`, mode 0644): a reader never sees half a file."""
    atomic_write(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def git_commit() -> str | None:
    """Commit of the harness source tree, with `-dirty` when it has local changes."""
    root = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=5).stdout.strip()
        if not sha:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


class RunDir:
    """A run directory; `open_run` creates or resumes one."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def __fspath__(self) -> str:
        return str(self.path)

    def __truediv__(self, other: str) -> Path:
        return self.path / other

    @property
    def info(self) -> dict:
        file = self.path / "run.json"
        return read_json(file) if file.is_file() else {}

    def update(self, **fields: Any) -> None:
        write_json(self.path / "run.json", {**self.info, **fields})

    @property
    def finished(self) -> bool:
        return self.info.get("status") == "finished"

    def finish(self, status: str = "finished") -> None:
        self.update(status=status, finished=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in ".-_" else "-" for c in str(text)).strip("-") or "x"


def run_key(cfg: DictConfig, kind: str = "run") -> str:
    """`<method>-<model>-<hash>`: what names a run directory after its date (and its claim file)."""
    method = cfg.method.name if kind == "run" else kind
    return f"{_slug(method)}-{_slug(cfg.model.name)}-{config_hash(cfg)}"


def find_run(cfg: DictConfig, kind: str = "run") -> RunDir | None:
    """The latest existing run directory of `cfg` (same method, model and config hash), or None.

    `open_run` resumes it; `harness grid` asks it whether a cell is already done, so both
    decide by the same hash."""
    base = Path(cfg.output_dir)  # the root keys of a composed config (harness/engine/run/settings.py RootSettings)
    suffix = f"-{run_key(cfg, kind)}"
    existing = sorted(base.glob(f"*{suffix}")) if base.is_dir() else []
    return RunDir(existing[-1]) if existing else None


def open_run(cfg: DictConfig, kind: str = "run") -> RunDir:
    """Create the run directory for `cfg`, or return the unfinished one with the same hash."""
    digest = config_hash(cfg)
    method = cfg.method.name if kind == "run" else kind
    base = Path(cfg.output_dir)  # the root keys of a composed config (harness/engine/run/settings.py RootSettings)
    suffix = f"-{_slug(method)}-{_slug(cfg.model.name)}-{digest}"
    run: RunDir | None = None
    candidate = find_run(cfg, kind) if cfg.resume else None
    if candidate is not None and not (candidate.finished and cfg.force):
        run = candidate
    if run is None:
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        run = RunDir(base / f"{stamp}{suffix}")
        run.path.mkdir(parents=True, exist_ok=True)
    before = run.info
    attempt = int(before.get("attempts", 0)) + 1
    (run.path / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(to_plain(cfg))), encoding="utf-8")
    if attempt == 1 or not run.finished:
        commit = git_commit()
        notes = list(before.get("notes") or [])
        note = _version_note(before, attempt, commit)
        if note is not None:
            notes.append(note)
            log.warning("%s: %s", run.path.name, note["note"])
        run.update(
            run_id=run.path.name, kind=kind, method=str(method), model=str(cfg.model.name), config_hash=digest,
            seed=cfg.get("seed"), harness_version=__version__, git_commit=commit,
            started=before.get("started") or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            status="running" if not run.finished else "finished", attempts=attempt, **({"notes": notes} if notes else {}),
        )
        keep_reserve(run)
    return run


def _version_note(before: dict, attempt: int, commit: str | None) -> dict | None:
    """run.json `notes` entry when this attempt runs another harness version or commit than the
    attempt before it: the run's files then come from both (a resumed training, a rescored set)."""
    if attempt == 1 or (before.get("harness_version"), before.get("git_commit")) == (__version__, commit):
        return None
    old = f"{before.get('harness_version')} ({before.get('git_commit') or 'no commit'})"
    new = f"{__version__} ({commit or 'no commit'})"
    return {"attempt": attempt, "note": f"attempt {attempt} runs harness {new}; attempts before it ran {old}: "
                                        f"its results mix both", "from": {"harness_version": before.get("harness_version"),
                                                                          "git_commit": before.get("git_commit")},
            "to": {"harness_version": __version__, "git_commit": commit}}


RESERVE = ".space-reserve"  # a run directory's emergency space (`release_reserve`)
RESERVE_BYTES = 64 * 1024
_FULL = (errno.ENOSPC, errno.EDQUOT)


def keep_reserve(run: RunDir) -> None:
    """Set aside RESERVE_BYTES in the run directory, so that on a full disk the run can still say
    in run.json that it failed and why (release_reserve frees it first)."""
    path = run.path / RESERVE
    if path.is_file() and path.stat().st_size == RESERVE_BYTES:
        return
    try:
        path.write_bytes(b"\0" * RESERVE_BYTES)
    except OSError:
        path.unlink(missing_ok=True)  # no room for it: nothing set aside


def release_reserve(run: RunDir) -> None:
    (run.path / RESERVE).unlink(missing_ok=True)


def disk_full(err: BaseException) -> OSError | None:
    """The first "no space left on device" (or quota) error behind `err`, following the chain of
    exceptions raised while handling it (a failed save, then a failed log write in its cleanup,
    ...); None when the disk was not full."""
    found, seen, todo = None, set(), [err]
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, OSError) and item.errno in _FULL:
            found = item  # the chain runs from the last raised to the first: keep the deepest
        todo += [item.__context__, item.__cause__]
    return found


class _RunLogHandler(logging.FileHandler):
    """run.log: a write that fails (a full disk) drops the record instead of printing a traceback
    per record; the failure itself reaches the user once, as the run's error."""

    def handleError(self, record: logging.LogRecord) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handleError(record)


def attach_log(run: RunDir, level: int = logging.INFO) -> logging.Handler:
    """Log to <run>/run.log (appended, DEBUG and up) and to the console (`level` and up);
    returns the file handler."""
    logger = logging.getLogger("factrl")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
    if not any(isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
               for h in logger.handlers):
        console = logging.StreamHandler()
        console.setLevel(level)
        console.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(console)
    handler = _RunLogHandler(run.path / "run.log", encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(formatter)
    logger.addHandler(handler)
    return handler


def detach_log(handler: logging.Handler) -> None:
    logging.getLogger("factrl").removeHandler(handler)
    handler.close()
