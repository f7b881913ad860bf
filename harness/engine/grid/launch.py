"""How `harness grid` launches its sweeps: claims first, then `harness run -m` per sweep.

Split from grid.py (which expands and looks up the cells). Each sweep is one `harness run -m`
subprocess with `hydra/launcher=<--launcher>` and a sweep folder of its own; `--parallel` of them
run at once (default: all for slurm, whose sweeps wait in the queue). Before anything is
submitted the grid claims every cell it launches (`pending`, harness/engine/run/claims.py); its jobs carry
the grid's token and take those claims over, and what no job took over is released at the end.
With `--eval-jobs` each sweep runs twice: `stage=train`, then `stage=eval` (its cells claimed
again while the evaluation jobs wait in the queue).
"""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .expand import Cell, Grid


def default_parallel(parallel: int | None, launcher: str, sweeps: int) -> int:
    """Sweeps launched at once: `--parallel`, else every sweep for slurm (each waits on its array in
    the queue, so one at a time would run the grid's sweeps back to back), else one."""
    if parallel is not None:
        return parallel
    return max(1, sweeps) if launcher == "slurm" else 1


def launch_sweep(index: int, total: int, line: list[str], launcher: str, hydra_args: list[str],
                 env: dict | None = None, label: str = "") -> tuple[int, float]:
    command = [sys.executable, "-m", "factrl.harness.engine.cli", "run", "-m", *line, f"hydra/launcher={launcher}",
               *hydra_args]
    print(f"[{index}/{total}{label}] harness run -m {shlex.join(command[5:])}", flush=True)
    started = time.monotonic()
    code = subprocess.run(command, env=env).returncode  # noqa: S603 -- our own CLI; a job may run for hours
    seconds = time.monotonic() - started
    print(f"[{index}/{total}{label}] exit {code} after {seconds:.1f} s", flush=True)
    return code, seconds


def cells_of(line: list[str], cells: list["Cell"]) -> list["Cell"]:
    """The cells a sweep line covers (sweeps() builds each line from whole cells)."""
    axes = {k: set(v.split(",")) for k, _, v in (o.partition("=") for o in line)
            if k in ("method", "model", "seed", "experiment")}
    fixed = [o for o in line if o.partition("=")[0] not in axes]
    return [c for c in cells if list(c.fixed) == fixed and c.method in axes["method"] and c.model in axes["model"]
            and str(c.seed) in axes["seed"] and (c.experiment or None) in (axes.get("experiment") or {None})]


class PendingClaims:
    """The grid's `pending` claims of the cells it submits (harness/engine/run/claims.py)."""

    def __init__(self, token: str, settings: Any):
        self.token, self.settings, self.held = token, settings, []  # settings: the ClaimSettings

    def take(self, cells: list["Cell"]) -> list["Cell"]:
        """Claim each cell; the ones another process claimed meanwhile are returned (skipped)."""
        from ..run.claims import ClaimedError, acquire

        lost = []
        for cell in cells:
            try:
                self.held.append(acquire(cell.claim_path, state="pending", token=self.token,
                                         stale_after_s=self.settings.pending_stale_s,
                                         heartbeat_s=self.settings.heartbeat_s, what=cell.label))
            except ClaimedError:
                lost.append(cell)
        return lost

    def release(self) -> None:
        for claim in self.held:  # only claims no job took over are still ours
            claim.release()
        self.held = []


def launch_all(grid: "Grid", todo: list["Cell"], args: argparse.Namespace, hydra_args: list[str],
               extra: list[str]) -> tuple[list[tuple[int, float]], list["Cell"], list[list[str]]]:
    """Claim the cells, launch their sweeps (`--parallel` at once), release what no job took over."""
    from ..run.claims import TOKEN_ENV, describe, holder
    from ..config import compose
    from .expand import _output_dir, sweeps

    token = uuid.uuid4().hex
    from ..run.settings import ClaimSettings

    pending = PendingClaims(token, ClaimSettings.from_mapping(compose(todo[0].overrides).get("claim")))
    if args.relaunch:  # the other holders' claims go; ours replace them
        for cell in todo:
            if cell.status == "claimed" and holder(cell.claim_path, 0.0, token) is not None:
                print(f"  relaunching {cell.label}: dropping the claim {describe(cell.claim_path, cell.holder or {})}")
                cell.claim_path.unlink(missing_ok=True)
    lost = pending.take(todo)
    for cell in lost:
        print(f"  skipped (claimed meanwhile): {cell.label}")
    todo = [c for c in todo if c not in lost]
    lines = sweeps(todo)
    env = {**os.environ, TOKEN_ENV: token}  # the jobs take the pending claims over
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = _output_dir(list(todo[0].fixed))  # the grid's own output_dir= too (demo.yaml), not only the CLI's
    parallel = default_parallel(args.parallel, args.launcher, len(lines))

    def sweep_args(index: int, stage: str) -> list[str]:
        own = [] if any(o.startswith("hydra.sweep.dir=") for o in hydra_args) else \
            [f"hydra.sweep.dir={out}/multirun/{stamp}-{grid.name}-{index}{'-' + stage if stage else ''}"]
        return [*hydra_args, *own]

    def one(item: tuple[int, list[str]]) -> tuple[int, float]:
        index, line = item
        if not args.eval_jobs:
            return launch_sweep(index + 1, len(lines), line, args.launcher, sweep_args(index, ""), env)
        code, seconds = launch_sweep(index + 1, len(lines), [*line, "stage=train"], args.launcher,
                                     sweep_args(index, "train"), env, " train")
        pending.take(cells_of(line, todo))  # the evaluation jobs wait in the queue too
        timeout = [f"hydra.launcher.timeout_min={args.eval_timeout_min}"] if args.eval_timeout_min else []
        code_eval, seconds_eval = launch_sweep(index + 1, len(lines), [*line, "stage=eval"], args.launcher,
                                               [*sweep_args(index, "eval"), *timeout], env, " eval")
        return code or code_eval, seconds + seconds_eval

    try:
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            results = list(pool.map(one, enumerate(lines)))
    finally:
        pending.release()
    return results, todo, lines


