"""Shared test utilities: run the real `harness` CLI in a subprocess."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def harness(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: int = 600
            ) -> subprocess.CompletedProcess:
    """Run `harness ARGS` with the test environment (one thread, no hub)."""
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                **(env or {})}
    return subprocess.run([sys.executable, "-m", "factrl.harness.engine.cli", *args], cwd=cwd or REPO, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def optimizer_stand_in(optim: str = "adamw_8bit") -> list[str]:
    """["optimizer"] where `optim` cannot run on this machine (8-bit AdamW without CUDA or
    bitsandbytes: the engine trains with torch AdamW and records the stand-in), else []."""
    from factrl.harness.training.optim import choose_optimizer

    return ["optimizer"] if choose_optimizer(optim).stand_in else []


def benchmark_script(name: str):
    """benchmarks/<name>.py loaded as a module (the benchmarks are scripts, not a package)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
