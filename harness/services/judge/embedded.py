"""`judge=embedded`: `transformers serve` on a local model directory, as a child process.

The server (the `transformers[serving]` extra: FastAPI + Uvicorn) binds 127.0.0.1 on a free
port, runs with HF_HUB_OFFLINE=1 and is pinned to the directory, so it serves that model only
(its model id is the directory path). `start()` waits for GET /health with a timeout and, on
failure, raises a one-line HarnessError ending in the tail of the server's log. `stop()` is
terminate -> wait -> kill; it runs from `Judge.close()`, on error and Ctrl-C (the `with`
block), and at interpreter exit (atexit); a harness killed outright is noticed by the
server's own watchdog (`_LAUNCHER`), so no server outlives the run.

Why a subprocess rather than an in-process model: the judge then speaks the same HTTP
protocol as `judge=openai` (one client, one parser, the same faults), and the training
process keeps its threads and memory to itself.
"""
from __future__ import annotations

import atexit
import importlib.util
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from ...core.errors import HarnessError

log = logging.getLogger("factrl.harness.services.judge")

# The server process runs transformers' CLI behind a watchdog thread: when the harness dies
# without cleaning up (SIGKILL, or a SIGTERM from a job's time limit, which skips atexit), the
# server is re-parented, notices, and stops itself instead of living on as an orphan.
_LAUNCHER = """
import os, signal, sys, threading, time
parent = int(sys.argv.pop(1))
def _watch():
    while os.getppid() == parent:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGTERM)
threading.Thread(target=_watch, daemon=True).start()
from transformers.cli.transformers import main
sys.argv[0] = "transformers"
sys.exit(main())
"""
_BIND_RETRIES = 3  # the free port can be taken between our probe and the server's bind


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve_command() -> list[str]:
    return [sys.executable, "-c", _LAUNCHER, str(os.getpid())]


def _log_tail(path: Path, lines: int = 4, chars: int = 400) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    kept: list[str] = []
    for line in reversed([line.strip() for line in text.splitlines() if line.strip()][-lines:]):
        if kept and sum(map(len, kept)) + len(line) > chars:
            break  # whole lines only: the last one (the error) is always there
        kept.insert(0, line[:chars])
    return " | ".join(kept) or "(empty log)"


class EmbeddedServer:
    """One `transformers serve` process pinned to `model_dir`."""

    def __init__(self, model_dir: str | Path, *, startup_timeout: float, threads: int, device: str, dtype: str,
                 log_path: str | Path | None = None):
        self.model_dir = str(model_dir)
        self.startup_timeout, self.threads = float(startup_timeout), int(threads)
        self.device, self.dtype = device, dtype
        if log_path is None:
            handle, name = tempfile.mkstemp(prefix="factrl-judge-server-", suffix=".log")
            os.close(handle)
            log_path = name
        self.log_path = Path(log_path)
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self._log_file = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> str:
        """Start the server and wait until /health answers; returns the base URL (…/v1)."""
        missing = [m for m in ("fastapi", "uvicorn") if importlib.util.find_spec(m) is None]
        if missing:
            raise HarnessError(f"judge=embedded runs `transformers serve`, which needs {', '.join(missing)}: "
                               f"pip install 'transformers[serving]', or use judge=openai judge.base_url=URL.")
        # Before the wait, which can last judge.startup_timeout: a silent minute reads as a hang.
        log.info("starting judge server (transformers serve) on %s; waiting up to %gs for it (judge.startup_timeout); "
                 "its log: %s", self.model_dir, self.startup_timeout, self.log_path)
        for attempt in range(_BIND_RETRIES):
            self._launch()
            started = time.monotonic()
            try:
                healthy = self._wait_healthy(started)
            except BaseException:  # Ctrl-C while waiting: no orphan server
                self.stop()
                raise
            if healthy:
                log.info("judge server (transformers serve) on %s: %s, ready in %.1fs", self.base_url,
                         self.model_dir, time.monotonic() - started)
                return self.base_url
            tail = _log_tail(self.log_path)
            running = self.proc is not None and self.proc.poll() is None
            self.stop()
            if not running and "address already in use" in tail.lower() and attempt + 1 < _BIND_RETRIES:
                continue
            why = (f"did not answer /health within {self.startup_timeout:g}s (judge.startup_timeout)" if running
                   else "exited during startup")
            raise HarnessError(f"judge=embedded: transformers serve on {self.model_dir} {why}; "
                               f"its log {self.log_path} ends: {tail}")
        raise AssertionError("unreachable")  # pragma: no cover

    def _launch(self) -> None:
        self.port = free_port()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(self.threads),
               "MKL_NUM_THREADS": str(self.threads), "TOKENIZERS_PARALLELISM": "false"}
        serve = ["serve", self.model_dir, "--host", "127.0.0.1", "--port", str(self.port), "--device", self.device,
                 "--dtype", self.dtype, "--log-level", "warning"]
        command = [*_serve_command(), *serve]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.log_path, "a", encoding="utf-8")
        self._log_file.write(f"$ transformers {' '.join(serve)}  (stops itself if pid {os.getpid()} dies)\n")
        self._log_file.flush()
        self.proc = subprocess.Popen(command, env=env, stdout=self._log_file, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        atexit.register(self.stop)

    def _wait_healthy(self, started: float) -> bool:
        url = f"http://127.0.0.1:{self.port}/health"
        while time.monotonic() - started < self.startup_timeout:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(url, timeout=2) as answer:
                    if answer.status == 200:
                        return True
            except OSError:
                pass
            time.sleep(0.25)
        return False

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        """terminate -> wait(grace) -> kill -> wait; safe to call twice and from atexit."""
        proc, self.proc = self.proc, None
        atexit.unregister(self.stop)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
