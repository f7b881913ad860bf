"""Evaluation after training in a fresh, single, clean process.

The training process carries state that evaluation must not meet:
- ZeRO-3: Accelerate's state keeps DeepSpeed's config alive, so `from_pretrained` in the same
  process loads under `deepspeed.zero.Init` and waits for ranks that have already exited;
- a multi-process run: rank 0's process group of W ranks is still up, and vLLM's evaluation
  engine builds its world group over all W ranks;
- vLLM colocate: the training engine set process-wide vLLM state (and
  VLLM_ENABLE_V1_MULTIPROCESSING=0), and its GPU share and the trained model stay allocated.

So with `eval_process: fresh` (and with `auto` wherever any of that can happen: CUDA, several
processes, DeepSpeed, vLLM) the run frees the trained model and evaluates the saved adapter in
`python -m factrl.harness.engine.run.eval_process REQUEST`: a new interpreter whose environment has the
launcher's variables removed (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_*, ACCELERATE_*, TORCHELASTIC_*,
...), logging into the run's run.log. Generation resumes from the per-sample files as always, so
a run killed during evaluation resumes it. `auto` on one CPU process keeps the in-process path,
which reuses the trained model (tests/core/test_eval_process.py shows both give the same results).

With `eval.processes: N` (> 1) generation is data parallel: N such processes at once, process k
on the k-th visible GPU (CUDA_VISIBLE_DEVICES), each generating every k-th record of every set
into `<run>/eval-shards/<k>/` (resumable like any generation, and skipping what `eval/` already
holds); their rows are then appended to `eval/<set>/generations.jsonl` and one more process scores
the merged sets. After a W-GPU training run, `eval.processes=W` keeps all W GPUs busy.

The request file holds the resolved config, secrets included (the child needs the judge's and
the API's keys), so it is written with mode 0600 in a private temporary folder and deleted after.
"""
from __future__ import annotations

import gc
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ...core.errors import ConfigError, HarnessError
from .settings import EVAL_PROCESS

log = logging.getLogger("factrl.eval_process")

MODES = EVAL_PROCESS  # auto | fresh | same (RootSettings checks the value)
# What torchrun, `accelerate launch`, DeepSpeed and a colocated vLLM engine put into the
# environment of the processes they start or run in.
LAUNCHER_KEYS = frozenset({
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",
    "ROLE_NAME", "ROLE_WORLD_SIZE", "NODE_RANK", "CROSS_RANK", "CROSS_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_DP_RANK", "VLLM_DP_RANK_LOCAL", "VLLM_DP_SIZE", "VLLM_DP_MASTER_IP",
    "VLLM_DP_MASTER_PORT", "TORCH_NCCL_ASYNC_ERROR_HANDLING",
})
LAUNCHER_PREFIXES = ("ACCELERATE_", "TORCHELASTIC_", "MASTER_", "FSDP_", "DEEPSPEED_", "PET_", "OMPI_COMM_WORLD_",
                     "PMI_")


def is_launcher_variable(key: str) -> bool:
    return key in LAUNCHER_KEYS or key.startswith(LAUNCHER_PREFIXES)


def clean_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """`environ` (default: this process's) without the launcher's variables (module docstring)."""
    environ = dict(os.environ if environ is None else environ)
    return {k: v for k, v in environ.items() if not is_launcher_variable(k)}


def mode_of(cfg: Any) -> str:
    """The root's `eval_process` (RootSettings checks it)."""
    from .settings import root_settings

    return root_settings(cfg).eval_process


def needs_fresh(cfg: Any, *, trained: bool, world_size: int) -> bool:
    """Whether evaluation goes to a fresh process (module docstring)."""
    mode = mode_of(cfg)
    if mode != "auto":
        return mode == "fresh"
    if not trained and world_size == 1:
        return False  # nothing of training's state exists in this process
    import torch

    vllm = str(cfg.eval.backend) == "vllm" or bool(cfg.train.use_vllm)  # composed: every key present
    deepspeed = os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true"
    return torch.cuda.is_available() or world_size > 1 or vllm or deepspeed


def _free(trained: Any) -> None:
    """Drop the trained model (and its GPU memory) before the evaluation process needs the GPU."""
    if trained is not None:
        trained.model = None
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # pragma: no cover
        pass


def _request(cfg: Any, identity: Any, adapter: Path | None, out_dir: Path, log_file: Path | None,
             result: Path) -> dict:
    from omegaconf import OmegaConf

    config = OmegaConf.to_container(cfg, resolve=True)  # unredacted: the child needs the keys
    config.pop("hydra", None)
    return {"config": config, "identity": identity.to_dict(), "adapter": str(adapter) if adapter else None,
            "out_dir": str(out_dir), "log_file": str(log_file) if log_file else None, "result": str(result),
            "parent": os.getpid()}


def processes_of(cfg: Any) -> int:
    return int(cfg.eval.processes)  # the composed eval group (EvalSettings checks it)


def _devices(count: int) -> list[str | None]:
    """The device each of `count` generation processes gets (None: leave CUDA_VISIBLE_DEVICES alone)."""
    from .gpus import device_files, parse_visible_devices

    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    visible = ([v.strip() for v in value.split(",")][:parse_visible_devices(value, device_files())] if value is not None
               else [str(i) for i in range(device_files())])
    if not visible:
        return [None] * count  # no GPU: N CPU processes
    if count > len(visible):
        raise ConfigError(f"eval.processes={count}: only {len(visible)} GPU(s) are visible; use at most "
                          f"{len(visible)} (one process per GPU)")
    return visible[:count]


def _start(cfg: Any, tmp: Path, name: str, env: dict, **request: Any) -> tuple[subprocess.Popen, Path]:
    result = tmp / f"{name}.result.json"
    file = tmp / f"{name}.request.json"
    fd = os.open(file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({**_request(cfg, request.pop("identity"), request.pop("adapter"), Path(request.pop("out_dir")),
                              request.pop("log_file"), result), **request}, handle, default=str)
    return subprocess.Popen([sys.executable, "-m", "factrl.harness.engine.run.eval_process", str(file)], env=env), result


def _wait(children: list[subprocess.Popen]) -> list[int]:
    """Wait for every child; on an interrupt (or a SIGTERM of this process) stop them all."""
    try:
        return [child.wait() for child in children]
    except BaseException:
        for child in children:
            child.terminate()
        for child in children:
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        raise


def merge_shards(out_dir: Path, shards_dir: Path) -> dict[str, int]:
    """Append the shards' rows that `out_dir`/<set>/generations.jsonl lacks; rows added per set."""
    from factrl.evals.generate import GENERATIONS, read_generations
    from factrl.evals.predictions import JsonlAppender

    added: dict[str, int] = {}
    for shard in sorted(p for p in Path(shards_dir).iterdir() if p.is_dir()):
        for folder in sorted(p for p in shard.iterdir() if (p / GENERATIONS).is_file()):
            target = Path(out_dir) / folder.name / GENERATIONS
            have = read_generations(target)
            writer = JsonlAppender(target)
            try:
                for key, row in read_generations(folder / GENERATIONS).items():
                    if key not in have:
                        writer.write(row)
                        have[key] = row
                        added[folder.name] = added.get(folder.name, 0) + 1
            finally:
                writer.close()
    return added


def evaluate_in_fresh_process(cfg: Any, *, identity: Any, adapter: Path | None, out_dir: Path,
                              log_file: Path | None = None, trained: Any = None) -> dict:
    """Run `evaluate` in a new clean process (or eval.processes data-parallel ones, then one that
    scores) and return its metrics (module docstring)."""
    import shutil

    _free(trained)
    env = clean_environment()
    removed = sorted(k for k in os.environ if k not in env)
    count = processes_of(cfg)
    common = {"identity": identity, "adapter": adapter, "log_file": log_file}
    with tempfile.TemporaryDirectory(prefix="factrl-eval-") as folder:  # mode 0700
        tmp = Path(folder)
        log.info("evaluating in a fresh process%s%s", f" (removed from its environment: {', '.join(removed)})"
                 if removed else "", f"; generating in {count} processes" if count > 1 else "")
        if count > 1:
            shards_dir = Path(out_dir).parent / f"{Path(out_dir).name}-shards"
            started = []
            for k, device in enumerate(_devices(count)):
                shard_env = {**env, **({"CUDA_VISIBLE_DEVICES": device} if device is not None else {})}
                started.append(_start(cfg, tmp, f"shard{k}", shard_env, out_dir=shards_dir / str(k),
                                      shard=[k, count, str(out_dir)], **common))
            codes = _wait([child for child, _ in started])
            if any(codes):
                raise HarnessError(f"evaluation failed in its generation process(es) (exit {codes}); see the "
                                   f"messages above and run.log. Rerunning the same command resumes it.")
            added = merge_shards(Path(out_dir), shards_dir)
            log.info("merged %s generated rows from %d processes into %s", added or "no new", count, out_dir)
            shutil.rmtree(shards_dir, ignore_errors=True)
        child, result = _start(cfg, tmp, "eval", env, out_dir=out_dir, **common)
        (code,) = _wait([child])
        if code != 0:
            raise HarnessError(f"evaluation failed in its process (exit {code}); see the message above and run.log. "
                               f"Rerunning the same command resumes it.")
        return json.loads(result.read_text(encoding="utf-8"))


def _die_with_parent(parent: int) -> None:
    """Linux: this process gets SIGTERM when the run that started it dies (even by SIGKILL)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _child(request_file: str) -> int:
    from omegaconf import OmegaConf

    from factrl.evals import evaluate

    from ...services.models import ModelIdentity
    from ...core.rundir import write_json

    request = json.loads(Path(request_file).read_text(encoding="utf-8"))
    _die_with_parent(int(request["parent"]))
    logger = logging.getLogger("factrl")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    console = logging.StreamHandler()
    console.setLevel(logging.INFO)
    console.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(console)
    if request.get("log_file"):
        handler = logging.FileHandler(request["log_file"], encoding="utf-8")
        handler.setLevel(logging.DEBUG)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
    leftover = sorted(k for k in os.environ if is_launcher_variable(k))
    log.info("evaluation process %d: launcher variables in its environment: %s", os.getpid(),
             ", ".join(leftover) or "none")
    cfg = OmegaConf.create(request["config"])
    shard = None
    if request.get("shard"):
        from factrl.evals.generate import Shard

        index, count, done = request["shard"]
        shard = Shard(int(index), int(count), Path(done))
        log.info("generation process %d of %d (CUDA_VISIBLE_DEVICES=%s)", shard.index + 1, shard.count,
                 os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))
    try:
        metrics = evaluate(cfg, identity=ModelIdentity(**request["identity"]), adapter=request.get("adapter"),
                           out_dir=Path(request["out_dir"]), shard=shard)
    except HarnessError as err:
        print(f"harness run: error: {err}", file=sys.stderr)
        return err.exit_code
    write_json(Path(request["result"]), metrics)
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))
