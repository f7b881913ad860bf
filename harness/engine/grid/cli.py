"""`harness grid`: the command line of comparison grids (the grid itself: harness/engine/grid/expand.py).

Parses the arguments, prints the cells and sweeps, and hands the sweeps to launch.py;
the grid model and its lookup stay free of the command line.
"""
from __future__ import annotations

import argparse
import shlex

from ...core.errors import ConfigError, HarnessError
from .expand import (LAUNCHERS, Grid, _check_launcher, _describe_holder, _output_dir, _share, load_grid, look_up,
                   sweeps)
from .expand import __doc__ as grid_doc
from .launch import launch_all


def _table(grid: Grid) -> str:
    width = max(len(c.label) for c in grid.cells)
    lines = [f"  {c.status:<6} {c.block:<16} {c.label:<{width}}  {c.run_dir or ''}".rstrip() for c in grid.cells]
    return "\n".join(lines)


def _counts(grid: Grid) -> str:
    done = sum(c.status == "done" for c in grid.cells)
    claimed = sum(c.status == "claimed" for c in grid.cells)
    return (f"{len(grid.cells)} cells, {done} done, {len(grid.cells) - done - claimed} todo"
            + (f", {claimed} claimed by other jobs" if claimed else ""))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness grid", description=grid_doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("grid", help="a configs/grid/ name (paper, tiny) or a grid YAML file")
    parser.add_argument("overrides", nargs="*", help="`harness run` overrides for every cell (output_dir=..., "
                        "pool.path=...); hydra.launcher.* ones go to the launcher")
    parser.add_argument("--dry-run", action="store_true", help="list the cells (done / todo) and the sweeps; launch nothing")
    parser.add_argument("--launcher", choices=LAUNCHERS, default="basic",
                        help="hydra/launcher of the sweeps: basic (here, in turn), local (submitit on this machine), "
                             "slurm (configs/hydra/launcher/slurm.yaml)")
    parser.add_argument("--seeds", default=None, help="comma-separated seeds replacing every block's (e.g. 42,43,44)")
    parser.add_argument("--block", action="append", default=None, help="only this block of the grid (repeatable)")
    parser.add_argument("--parallel", type=int, default=None,
                        help="sweeps launched at once (default: all of them for slurm, whose sweeps wait on the "
                             "queue; 1 otherwise)")
    parser.add_argument("--relaunch", action="store_true",
                        help="also launch cells that another process claims (a pending or running job); cancel "
                             "those jobs first, or two jobs share one run directory")
    parser.add_argument("--eval-jobs", action="store_true",
                        help="per sweep: a training sweep (stage=train), then an evaluation sweep (stage=eval) "
                             "with jobs and time limits of their own")
    parser.add_argument("--eval-timeout-min", type=int, default=None,
                        help="with --eval-jobs: hydra.launcher.timeout_min of the evaluation sweeps")
    parser.add_argument("--max-no-signal", default=None, metavar="SHARE",
                        help="fail (exit 1) when a trained method's no-signal completions exceed this share "
                             "(default: the grid's signal.max_no_signal_share, else 0.5, configs/grid/_defaults.yaml)")
    return parser


def _finish(grid: Grid, threshold: float) -> int:
    """Every finished trained cell received a signal (grid/checks.py), then the grid's `publish:`."""
    from .checks import check_signal, summary_line
    from .publish import publish_grid

    shares, failures = check_signal(grid, threshold)
    for item in shares:
        print(summary_line(item))
    if failures:
        print("\n".join(failures))
        raise HarnessError(f"{len(failures)} method(s) of grid {grid.name} had no signal for more than "
                           f"{threshold:g} of their completions (lines above); nothing published.")
    if grid.publish:
        pending = [c for c in grid.cells if c.status != "done"]
        if pending:
            print(f"not published: {len(pending)} cell(s) not finished ({', '.join(c.label for c in pending)}); "
                  "rerun the grid when their jobs are done")
        else:
            publish_grid(grid, _output_dir(list(grid.cells[0].fixed)))
    return 0


def main(argv: list[str]) -> int:
    args = _parser().parse_intermixed_args(argv)
    try:
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    except ValueError:
        raise ConfigError(f"--seeds {args.seeds}: must be comma-separated integers, e.g. 42,43,44.") from None
    if args.parallel is not None and args.parallel < 1:
        raise ConfigError(f"--parallel {args.parallel}: must be at least 1.")
    if args.eval_timeout_min is not None and (not args.eval_jobs or args.eval_timeout_min < 1):
        raise ConfigError("--eval-timeout-min: give a positive number of minutes, together with --eval-jobs.")
    hydra_args = [o for o in args.overrides if o.startswith(("hydra.", "hydra/"))]
    extra = [o for o in args.overrides if o not in hydra_args]
    if not any(o.startswith("leaderboard=") for o in extra):
        extra.append("leaderboard=rundir")  # cluster-safe: jobs never share a SQLite file
    grid = load_grid(args.grid, extra, seeds, args.block)
    threshold = grid.max_no_signal_share if args.max_no_signal is None else _share(args.max_no_signal,
                                                                                   "--max-no-signal")
    look_up(grid)
    wanted = ("todo", "resume", "claimed") if args.relaunch else ("todo", "resume")
    todo = [c for c in grid.cells if c.status in wanted]
    claimed = [c for c in grid.cells if c.status == "claimed" and c not in todo]
    lines = sweeps(todo)
    print(f"grid {grid.name} ({grid.source}): {_counts(grid)}\n{_table(grid)}")
    if grid.left_out:
        named = " ".join(f"--block {b}" for b in [*dict.fromkeys(c.block for c in grid.cells), *grid.left_out])
        print(f"optional block(s) not run: {', '.join(grid.left_out)} (to add them: harness grid {args.grid} {named})")
    if args.dry_run:
        print(f"sweeps ({len(lines)}, hydra/launcher={args.launcher}):")
        print("\n".join(f"  harness run -m {shlex.join(line)}" for line in lines) or "  none: nothing to launch")
        return 0
    for cell in claimed:
        print(f"  skipped (claimed, --relaunch launches it anyway): {cell.label}: "
              f"{_describe_holder(cell)}")
    if not todo:
        print("nothing to launch: every cell is done" + (f" or claimed ({len(claimed)})" if claimed else ""))
        return _finish(grid, threshold)
    _check_launcher(args.launcher)
    results, todo, lines = launch_all(grid, todo, args, hydra_args, extra)
    look_up(grid)
    launched = {id(c) for c in todo}
    finished = [c for c in grid.cells if id(c) in launched and c.status == "done"]
    missing = [c for c in grid.cells if id(c) in launched and c.status != "done"]
    held = f"{len(claimed)} claimed by other jobs, " if claimed else ""
    print(f"grid {grid.name}: {len(grid.cells)} cells: {len(grid.cells) - len(todo) - len(claimed)} already done, "
          f"{held}{len(todo)} launched in {len(lines)} sweep(s) ({sum(s for _, s in results):.1f} s): "
          f"{len(finished)} finished, {len(missing)} not finished")
    for cell in missing:
        print(f"  not finished: {cell.label} ({cell.run_dir or 'no run directory'})")
    if any(o == "leaderboard=rundir" for o in extra) and not grid.publish:
        out = _output_dir(list(grid.cells[0].fixed))
        store = next((o.split("=", 1)[1] for o in reversed(extra) if o.startswith("leaderboard.store=")),
                     "leaderboard.sqlite")
        print(f"leaderboard: harness leaderboard rebuild {shlex.quote(out)} --store {shlex.quote(store)} [--replace]")
    if missing:
        raise HarnessError(f"{len(missing)} cell(s) of grid {grid.name} did not finish; see the job logs "
                           "(run.log in each run directory; .submitit/ for local and slurm), then rerun the grid.")
    return _finish(grid, threshold)
