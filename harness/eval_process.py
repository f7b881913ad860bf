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
`python -m factrl.harness.eval_process REQUEST`: a new interpreter whose environment has the
launcher's variables removed (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_*, ACCELERATE_*, TORCHELASTIC_*,
...), logging into the run's run.log. Generation resumes from the per-sample files as always, so
a run killed during evaluation resumes it. `auto` on one CPU process keeps the in-process path,
which reuses the trained model (tests/core/test_eval_process.py shows both give the same results).

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

from .errors import ConfigError, HarnessError

log = logging.getLogger("factrl.eval_process")

MODES = ("auto", "fresh", "same")
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
    mode = str(cfg.get("eval_process", "auto"))
    if mode not in MODES:
        raise ConfigError(f"eval_process={mode!r}: use auto (a fresh process on GPUs, several processes, DeepSpeed "
                          f"or vLLM), fresh (always) or same (in the training process)")
    return mode


def needs_fresh(cfg: Any, *, trained: bool, world_size: int) -> bool:
    """Whether evaluation goes to a fresh process (module docstring)."""
    mode = mode_of(cfg)
    if mode != "auto":
        return mode == "fresh"
    if not trained and world_size == 1:
        return False  # nothing of training's state exists in this process
    import torch

    vllm = str(cfg.eval.get("backend", "hf")) == "vllm" or bool(cfg.train.get("use_vllm", False))
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


def evaluate_in_fresh_process(cfg: Any, *, identity: Any, adapter: Path | None, out_dir: Path,
                              log_file: Path | None = None, trained: Any = None) -> dict:
    """Run `evaluate` in a new clean process and return its metrics (module docstring)."""
    _free(trained)
    env = clean_environment()
    removed = sorted(k for k in os.environ if k not in env)
    with tempfile.TemporaryDirectory(prefix="factrl-eval-") as tmp:  # mode 0700
        result = Path(tmp) / "result.json"
        request = Path(tmp) / "request.json"
        fd = os.open(request, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(_request(cfg, identity, adapter, Path(out_dir), log_file, result), handle, default=str)
        log.info("evaluating in a fresh process%s", f" (removed from its environment: {', '.join(removed)})"
                 if removed else "")
        child = subprocess.Popen([sys.executable, "-m", "factrl.harness.eval_process", str(request)], env=env)
        try:
            code = child.wait()
        except BaseException:  # an interrupt or a SIGTERM of this process: the child stops too
            child.terminate()
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            raise
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

    from .models import ModelIdentity
    from .rundir import write_json

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
    try:
        metrics = evaluate(cfg, identity=ModelIdentity(**request["identity"]), adapter=request.get("adapter"),
                           out_dir=Path(request["out_dir"]))
    except HarnessError as err:
        print(f"harness run: error: {err}", file=sys.stderr)
        return err.exit_code
    write_json(Path(request["result"]), metrics)
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))
