"""`harness run`: the one obvious path, CLI -> config -> Method -> trainer -> evaluator -> leaderboard.

    harness run                                   # embedded default (CPU, offline, minutes)
    harness run method=corver model=llama-3.2-3b  # a paper run (GPU)
    harness run -m method=raw,corver model=smollm2-135m   # a sweep
    harness run launcher=torchrun launcher.num_processes=2 ...   # data parallel (harness/training/README.md)

A rerun of the same command finds the same run directory (config hash) and resumes it:
training from its last checkpoint, evaluation from the last generated sample.
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from . import models
from .config import hydra_entry, to_plain
from .errors import ConfigError, HarnessError
from .registry import get_method
from .rundir import RunDir, attach_log, detach_log, open_run, write_json
from .training import distributed

log = logging.getLogger("factrl.run")


def _log_config(cfg: DictConfig) -> None:
    """The resolved hyperparameters, before anything else (CleanRL habit); in run.log only."""
    log.debug("config:\n%s", OmegaConf.to_yaml(OmegaConf.create(to_plain(cfg))).rstrip())


def _summary(run: RunDir, metrics: dict) -> str:
    lines = [f"run directory: {run.path}"]
    for name, data in metrics.get("sets", {}).items():
        values = data.get("metrics", {})
        shown = [f"{k}={v['value'] * 100:.2f}%" for k, v in values.items()
                 if k in ("accuracy", "em", "f1", "na_rate") and isinstance(v, dict)]
        n = next((v.get("n") for v in values.values() if isinstance(v, dict) and v.get("n") is not None), "?")
        lines.append(f"  {name:<12} n={n:<6} " + "  ".join(shown))
    macro = (metrics.get("macro") or {}).get("closed_book_accuracy")
    if macro:
        lines.append(f"  macro (closed-book, {macro.get('n_sets')} sets): {macro['value'] * 100:.2f}%")
    return "\n".join(lines)


def _train(cfg: DictConfig, method: Any, identity: models.ModelIdentity, run: RunDir):
    from .pool import load_pool, pool_fingerprint
    from .timer import from_config
    from .training.engine import train

    dedup: dict = {}
    rows = load_pool(cfg.pool, cfg.eval, report=dedup)
    run.update(pool={"name": cfg.pool.name, "path": cfg.pool.get("path"), "size": len(rows),
                     "sha256": pool_fingerprint(rows), "dedup": dedup})
    timer = from_config(cfg.timer, run / "timings.json")
    try:
        return train(cfg, method, identity, run.path, rows, timer=timer)
    finally:
        timer.steps = int(cfg.train.steps)
        timer.write()


def _provenance(components: dict | None, model_cfg: Any = None) -> dict:
    """run.json / metrics.json fields: `components` and the sorted names of the stand-ins.
    Random weights of a paper model's shape (`model.source=random`) are a `model` stand-in."""
    from .training.components import stand_in_names

    components = components or {}
    if model_cfg is not None and model_cfg.get("source") == "random":
        from .model_shapes import describe

        components = {**components, "model": describe(model_cfg, seed=int(model_cfg.get("seed") or 0),
                                                      shrink=model_cfg.get("shrink"))}
    return {"components": components, "stand_ins": stand_in_names(components)}


def _follow_main(cfg: DictConfig, method: Any) -> None:
    """A process other than rank 0 of a multi-process run: train beside it, write nothing.

    Rank 0 opens the run directory and resolves the model first, then shares the directory
    (None: nothing to train); evaluation and recording are rank 0's alone.
    """
    from .pool import load_pool
    from .training.engine import train

    path = distributed.share_from_main(None)
    if path is None or method.algorithm not in ("grpo", "ppo"):
        return None
    identity = models.resolve(cfg.model)
    train(cfg, method, identity, Path(path), load_pool(cfg.pool, cfg.eval), timer=None)
    return None


def run_task(cfg: DictConfig) -> dict | None:
    """Run one composed config end to end; returns the run-level metrics."""
    mode = cfg.leaderboard.get("mode", "store")
    if mode not in ("store", "rundir"):  # checked before training, not after hours of it
        raise ConfigError(f"leaderboard.mode = {mode!r}: use store (record to leaderboard.store) or rundir "
                          "(write only the run directory; `harness leaderboard rebuild` later).")
    method_cls = get_method(str(cfg.method.name))
    method = method_cls(cfg.method)
    if not distributed.is_main():
        return _follow_main(cfg, method)
    run = open_run(cfg)
    if run.finished and not cfg.get("force", False):
        distributed.share_from_main(None)  # the other processes have nothing to train
        print(f"harness run: already finished (force=true reruns it)\n{_summary(run, _read_metrics(run))}")
        return _read_metrics(run)
    handler = attach_log(run)
    started = time.time()
    try:
        _log_config(cfg)
        log.info("run directory: %s", run.path)
        identity = models.resolve(cfg.model)
        run.update(model_identity=identity.to_dict(), method_version=method.version,
                   method_algorithm=method.algorithm, world_size=distributed.world_size())
        distributed.share_from_main(str(run.path))  # the other processes train in this directory
        trained = _train(cfg, method, identity, run) if method.algorithm in ("grpo", "ppo") else None
        # Which reward components made the result (issue 9); {} / [] for evaluation-only runs.
        provenance = _provenance(trained.components if trained else None, cfg.model)
        run.update(**provenance)
        from factrl.evals import evaluate

        metrics = evaluate(cfg, identity=identity, adapter=trained.adapter_dir if trained else None,
                           out_dir=run / "eval", model=trained.model if trained else None,
                           tokenizer=trained.tokenizer if trained else None)
        metrics = {**metrics, **provenance}
        write_json(run / "metrics.json", metrics)
        run.finish()
        if cfg.leaderboard.get("enabled", True):
            _record(run, cfg)
        log.info("finished in %.1f s", time.time() - started)
        print(_summary(run, metrics))
        return metrics
    except BaseException as err:
        if not run.finished:  # an interrupt after finish() (e.g. while recording) keeps it finished
            run.update(status="failed" if not isinstance(err, KeyboardInterrupt) else "interrupted",
                       error=f"{type(err).__name__}: {err}"[:2000])
            if isinstance(err, KeyboardInterrupt):
                log.warning("interrupted (%s); the same command resumes from the last checkpoint",
                            err or type(err).__name__)
        raise
    finally:
        detach_log(handler)


def _record(run: RunDir, cfg: DictConfig) -> None:
    """Add the run's rows to the leaderboard. Never raises (short of an interrupt): the run
    is already finished, so a refusal (invalid rows, a changed re-add, a locked or corrupt
    store, even a bug) is written to run.json with the exact command that records it later."""
    import shlex

    from factrl.leaderboard import RowRefused, StoreError, add_run

    store = Path(str(cfg.leaderboard.store)).resolve()  # absolute: the command works from anywhere
    version = cfg.leaderboard.get("version")
    if cfg.leaderboard.get("mode", "store") == "rundir":
        _defer_record(run, store, version)
        return
    if os.environ.get("SLURM_JOB_ID"):  # many jobs, one SQLite file, usually on a network file system
        log.warning("leaderboard: recording from a Slurm job into %s; on a shared file system pass "
                    "leaderboard=rundir and `harness leaderboard rebuild` afterwards (docs/CLUSTER.md)", store)
    command = ["harness", "leaderboard", "add", str(run.path.resolve()), "--store", str(store)]
    command += ["--version", str(version)] if version not in (None, "") else []
    try:
        report = add_run(run.path, store_path=store, version=version)
    except Exception as err:  # noqa: BLE001 -- recording must not turn a finished run into a failed one
        if isinstance(err, RowRefused) and err.replaceable:
            command.append("--replace")  # the store holds this run with other numbers
        reason = str(err) if isinstance(err, HarnessError) else f"{type(err).__name__}: {err} (a bug; please report)"
        later = shlex.join(command)
        fix = ("retry when the other writer is done: " if isinstance(err, StoreError) and err.kind == "locked"
               else "fix the cause, then: ")
        run.update(leaderboard={"store": str(store), "status": "refused", "refused": reason[:2000],
                                "command": later})
        log.warning("leaderboard: rows not recorded: %s\n  %s%s", reason, fix, later,
                    exc_info=not isinstance(err, HarnessError))
        return
    run.update(leaderboard={"store": str(store), "status": "recorded", "rows": report.ids,
                            "added": len(report.added), "replaced": len(report.replaced),
                            "unchanged": len(report.unchanged)})
    log.info("leaderboard: %s to %s", report.summary(), store)


def _defer_record(run: RunDir, store: Path, version: Any) -> None:
    """leaderboard=rundir (cluster jobs): write no store, say in run.json how the rows get in."""
    import shlex

    command = ["harness", "leaderboard", "rebuild", str(run.path.resolve().parent), "--store", str(store)]
    command += ["--version", str(version)] if version not in (None, "") else []
    run.update(leaderboard={"store": str(store), "status": "not_recorded", "mode": "rundir",
                            "reason": "leaderboard=rundir: this job wrote only its run directory",
                            "command": shlex.join(command)})
    log.info("leaderboard: not recorded (leaderboard=rundir); later: %s", shlex.join(command))


def _read_metrics(run: RunDir) -> dict:
    from .rundir import read_json

    file = run / "metrics.json"
    return read_json(file) if file.is_file() else {}


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        print("\nOverrides are Hydra's: group=option (method, model, pool, eval, train, lora, corpus, timer, "
              "leaderboard, launcher) and key=value.\n`harness run --cfg job` prints the composed config; "
              "`harness methods` lists methods.")
        return 0
    from .launcher import maybe_launch
    from .signals import raise_on_sigterm

    launched = maybe_launch(argv)  # launcher=accelerate|torchrun: this command again, in N processes
    if launched is not None:
        return launched
    raise_on_sigterm()  # a time limit's SIGTERM marks the run interrupted (resumable), not `running`
    try:
        return hydra_entry(run_task, argv, "harness run")
    finally:
        distributed.shutdown()  # under torchrun / accelerate: before exit, so no process aborts
