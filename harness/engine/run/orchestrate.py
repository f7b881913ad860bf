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

from ...services import models
from ...core.config_values import to_plain
from ...core.errors import ConfigError, HarnessError
from ...services.models.disk import for_disk_loaders
from ...core.registry import get_method
from ...core.rundir import RunDir, attach_log, detach_log, disk_full, open_run, release_reserve, write_json
from .settings import check_run_settings

log = logging.getLogger("factrl.run")


def _log_config(cfg: DictConfig) -> None:
    """The resolved hyperparameters, before anything else (CleanRL habit); in run.log only."""
    log.debug("config:\n%s", OmegaConf.to_yaml(OmegaConf.create(to_plain(cfg))).rstrip())


def _summary(run: RunDir, metrics: dict, recording: bool = True) -> str:
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
    lines.append(_leaderboard_line(run.info.get("leaderboard"), recording))
    return "\n".join(lines)


def _leaderboard_line(entry: dict | None, recording: bool = True) -> str:
    """What became of the run's leaderboard rows (run.json `leaderboard`), in one line."""
    if not entry:
        return ("leaderboard: not recorded (the run stopped before recording; rerun the same command to record it)"
                if recording else "leaderboard: not recorded (leaderboard.enabled=false)")
    if entry.get("status") == "recorded":
        return (f"leaderboard: recorded in {entry['store']} ({entry.get('added', 0)} added, "
                f"{entry.get('unchanged', 0)} unchanged, {entry.get('replaced', 0)} replaced)")
    if entry.get("status") == "not_recorded":
        return f"leaderboard: not recorded ({entry.get('reason')}); later: {entry.get('command')}"
    return f"leaderboard: NOT recorded: {entry.get('why') or entry.get('refused')} (run.json `leaderboard` says more)"


def _train(cfg: DictConfig, method: Any, identity: models.ModelIdentity, run: RunDir, parsed: dict[str, Any]):
    from ...pool import load_pool, pool_fingerprint
    from ...core.timer import from_config
    from ...training.engine import train

    dedup: dict = {}
    pool = parsed["pool"]
    rows = load_pool(pool, cfg.eval, report=dedup, evidence_cfg=parsed.get("evidence"))
    run.update(pool={"name": pool.name, "path": pool.path, "size": len(rows),
                     "sha256": pool_fingerprint(rows), "dedup": dedup})
    timer = from_config(parsed.get("timer"), run / "timings.json")
    steps = parsed["train"].steps  # checked before the run started (check_run_settings)
    try:
        return train(cfg, method, identity, run.path, rows, timer=timer)
    finally:
        timer.steps = steps
        timer.write()


def _provenance(components: dict | None, model_cfg: Any = None) -> dict:
    """run.json / metrics.json fields: `components` and the sorted names of the stand-ins.
    Random weights of a paper model's shape (`model.source=random`) are a `model` stand-in."""
    from ...training.components import stand_in_names

    components = components or {}
    if model_cfg is not None and model_cfg.get("source") == "random":
        from ...services.models.shapes import describe

        components = {**components, "model": describe(model_cfg)}
    return {"components": components, "stand_ins": stand_in_names(components)}


def _follow_main(cfg: DictConfig, method: Any) -> None:
    """A process other than rank 0 of a multi-process run: train beside it, write nothing.

    Rank 0 opens the run directory and resolves the model first, then shares the directory
    (None: nothing to train); evaluation and recording are rank 0's alone.
    """
    from ...pool import load_pool
    from ...training import distributed
    from ...training.engine import train

    # Resolve (on first use: download) the model before the first collective, as rank 0 does, so
    # no rank waits for another's download inside a collective and its timeout.
    identity = for_disk_loaders(models.resolve(cfg.model), cfg) if method.algorithm in ("grpo", "ppo") \
        else None
    path = distributed.share_from_main(None)
    if path is None or identity is None:
        return None
    train(cfg, method, identity, Path(path), load_pool(cfg.pool, cfg.eval, evidence_cfg=cfg.get("evidence")), timer=None)
    return None


def run_task(cfg: DictConfig) -> dict | None:
    """Run one composed config end to end; returns the run-level metrics.

    Under launcher=accelerate|torchrun the job re-executes itself in N processes here (per job,
    so each job of a sweep is launched where it runs). Rank 0 claims the run first
    (harness/engine/run/claims.py): a run that another live job holds stops with a one-line error."""
    from . import gpus, claims as claims
    from .launcher import run_job
    from ...core.rundir import find_run, run_key

    method_cls = get_method(str(cfg.method.name))
    method = method_cls(cfg.method)  # parses method.* (Method.settings_class): a bad value stops here
    parsed = check_run_settings(cfg)  # every other group: checked before training, not after hours of it
    stage = parsed["root"].stage
    if stage == "train" and method.algorithm not in ("grpo", "ppo"):
        print(f"harness run: stage=train: method '{method.name}' trains nothing")
        return None
    from ...training import distributed  # torch: imported once a run starts, not for `--help`

    distributed.configure(60.0 * parsed["launcher"].timeout_min)
    if not distributed.is_main():
        return _follow_main(cfg, method)
    held = parsed["claim"]
    with claims.acquire(claims.claim_path(cfg), stale_after_s=held.stale_s, heartbeat_s=held.heartbeat_s,
                        what=f"run {run_key(cfg)}") as claim:
        code = run_job(cfg, claim_token=claim.token)  # launcher=accelerate|torchrun: N processes, then here
        if code is not None:
            if code != 0:
                raise HarnessError(f"the launched run exited with status {code}; its run.log says why "
                                   f"(rerunning the same command resumes it)")
            found = find_run(cfg)
            return _read_metrics(found) if found is not None else None
        if method.algorithm in ("grpo", "ppo") and stage != "eval":
            gpus.check_one_process("harness run")  # before anything initialises CUDA
        gpus.warn_if_cpu_torch()
        return _run_here(cfg, method, parsed)


def _run_here(cfg: DictConfig, method: Any, parsed: dict[str, Any]) -> dict | None:
    """Rank 0 (or the only process): open the run directory, train, evaluate, record."""
    from ...training import distributed

    run = open_run(cfg)
    root, board, stage = parsed["root"], parsed["leaderboard"], parsed["root"].stage
    recording = board.enabled
    if run.finished and not root.force:
        distributed.share_from_main(None)  # the other processes have nothing to train
        if recording and not run.info.get("leaderboard"):
            _record(run, board)  # finished, then stopped (a kill, SIGTERM) before its rows were recorded
        print(f"harness run: already finished (force=true reruns it)\n{_summary(run, _read_metrics(run), recording)}")
        return _read_metrics(run)
    handler = attach_log(run)
    started = time.time()
    try:
        _log_config(cfg)
        log.info("run directory: %s", run.path)
        from . import threads

        count, why = threads.apply(root.threads)  # before the model loads
        log.info("torch threads: %d (%s)", count, why)
        identity = models.resolve(cfg.model)
        run.update(model_identity=identity.to_dict(), method_version=method.version,
                   method_algorithm=method.algorithm, world_size=distributed.world_size(), threads=count)
        identity = for_disk_loaders(identity, cfg)  # a random model for vLLM: saved to disk first
        trains = method.algorithm in ("grpo", "ppo")
        if stage == "eval" and trains and not _trained(run):
            distributed.share_from_main(None)
            raise ConfigError(f"stage=eval: {run.path} has not finished training; run it with stage=train (or "
                              f"stage=all) first")
        distributed.share_from_main(str(run.path))  # the other processes train in this directory
        trained = _train(cfg, method, identity, run, parsed) if trains else None
        # Which reward components made the result; {} / [] for evaluation-only runs.
        provenance = _provenance(trained.components if trained else None, cfg.model)
        run.update(**provenance)
        if stage == "train":
            run.update(status="trained")
            print(f"harness run: trained (stage=train); evaluate with the same command and stage=eval\n"
                  f"run directory: {run.path}")
            return None
        metrics = _evaluate(cfg, identity, trained, run)
        metrics = {**metrics, **provenance}
        write_json(run / "metrics.json", metrics)
        run.finish()  # a stop from here until recorded is recorded by the rerun (the finished path above)
        if recording:
            _record(run, board)
        log.info("finished in %.1f s", time.time() - started)
        print(_summary(run, metrics, recording))
        return metrics
    except BaseException as err:
        full = disk_full(err)
        if full is not None:
            release_reserve(run)  # room for run.json to say so
        if not run.finished:  # an interrupt after finish() (e.g. while recording) keeps it finished
            _mark_stopped(run, err, full)
        if full is not None:
            raise HarnessError(f"no space left on device writing {_where(full, run)}; free space there (or set "
                               f"output_dir=...), then rerun the same command: it resumes from the last complete "
                               f"checkpoint") from None
        raise
    finally:
        detach_log(handler)


def _where(full: OSError, run: RunDir) -> str:
    """The file a full disk refused, or (a write to an open file names none) the run directory."""
    return str(full.filename) if full.filename else f"into {run.path}"


def _mark_stopped(run: RunDir, err: BaseException, full: OSError | None) -> None:
    """run.json `status`: interrupted (a signal) or failed, with the error in one line."""
    interrupted = isinstance(err, KeyboardInterrupt)
    error = f"no space left on device writing {_where(full, run)}" if full is not None else f"{type(err).__name__}: {err}"
    try:
        run.update(status="interrupted" if interrupted else "failed", error=error[:2000])
    except OSError as again:  # even the reserve did not make room: the error line still says why
        log.debug("run.json not updated: %s", again)
    if interrupted:
        log.warning("interrupted (%s); the same command resumes from the last checkpoint", err or type(err).__name__)


def _trained(run: RunDir) -> bool:
    from ...training.engine import DONE_MARKER

    return (run / "train" / DONE_MARKER).is_file()


def _evaluate(cfg: DictConfig, identity: models.ModelIdentity, trained: Any, run: RunDir) -> dict:
    """Evaluate the trained adapter (or the bare model): in a fresh clean process where the
    training process's state could reach evaluation (harness/engine/run/eval_process.py), else here with
    the trained model still in memory."""
    from .eval_process import evaluate_in_fresh_process, needs_fresh, processes_of
    from ...training import distributed

    adapter = trained.adapter_dir if trained else None
    if processes_of(cfg) > 1 or needs_fresh(cfg, trained=trained is not None, world_size=distributed.world_size()):
        return evaluate_in_fresh_process(cfg, identity=identity, adapter=adapter, out_dir=run / "eval",
                                         log_file=run / "run.log", trained=trained)
    from factrl.evals import evaluate

    return evaluate(cfg, identity=identity, adapter=adapter, out_dir=run / "eval",
                    model=trained.model if trained else None, tokenizer=trained.tokenizer if trained else None)


def _record(run: RunDir, board: Any) -> None:
    """Add the run's rows to the leaderboard (`board`: the run's LeaderboardSettings). Never raises
    (short of an interrupt): the run is already finished, so a refusal (invalid rows, a changed
    re-add, a locked or corrupt store, even a bug) is written to run.json with the exact command
    that records it later."""
    import shlex

    from factrl.leaderboard import RowRefused, StoreError, add_run

    store = Path(str(board.store)).resolve()  # absolute: the command works from anywhere
    version = board.version
    if board.mode == "rundir":
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
        frozen = err.frozen_summary() if isinstance(err, RowRefused) else ""
        entry = {"store": str(store), "status": "refused", "refused": reason[:2000], "command": later,
                 "why": (f"{frozen} in {store}" if frozen else reason)[:300]}
        if frozen:  # the usual cause: another eval.limit (or set, decoding) than the store's first rows
            entry["frozen"] = err.frozen
            run.update(leaderboard=entry)
            log.warning("leaderboard: not recorded: %s in %s; record into another store (leaderboard.store=PATH) "
                        "or with leaderboard=rundir, or under a new leaderboard version (leaderboard/store/versions.py)",
                        frozen, store)
            return
        fix = ("retry when the other writer is done: " if isinstance(err, StoreError) and err.kind == "locked"
               else "fix the cause, then: ")
        run.update(leaderboard=entry)
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
    from ...core.rundir import read_json

    file = run / "metrics.json"
    return read_json(file) if file.is_file() else {}
