"""The openai backend against a real third-party server: `transformers serve` on the embedded
SmolLM2 directory, whose default response prefix ("<think>") goes to /completions.

Needs the `transformers[serving]` extra (fastapi, uvicorn); skipped without it.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.services.models import resolve

from factrl.evals import evaluate
from factrl.evals.generate import read_generations

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def served_smollm2(tmp_path):
    missing = [m for m in ("fastapi", "uvicorn") if importlib.util.find_spec(m) is None]
    cli = shutil.which("transformers", path=str(Path(sys.executable).parent))
    if missing or cli is None:
        pytest.skip(f"`transformers serve` needs {', '.join(missing) or 'its CLI'} "
                    f"(pip install 'transformers[serving]')")
    identity = resolve(compose(["model=smollm2-135m"]).model)
    port = _free_port()
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen([cli, "serve", identity.path, "--port", str(port), "--device", "cpu", "--dtype", "float32"],
                            env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"transformers serve did not start: {(tmp_path / 'serve.log').read_text()[-2000:]}")
                time.sleep(0.5)
        yield identity, f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def test_greedy_answers_through_transformers_serve_equal_the_hf_backend(served_smollm2, tmp_path):
    identity, url = served_smollm2
    common = ["model=smollm2-135m", "eval=demo", "eval.limit=4", "eval.max_new_tokens=32", "eval.cache=false"]
    evaluate(compose(common), identity=identity, out_dir=tmp_path / "hf")
    served = compose([*common, "eval.backend=openai", f"eval.openai.base_url={url}",
                      f"eval.openai.model={identity.path}", "eval.openai.concurrency=1", "eval.openai.timeout=300"])
    result = evaluate(served, identity=identity, out_dir=tmp_path / "openai")
    assert result["sets"]["demo"]["generation"]["backend_settings"]["endpoint"] == "completions"
    hf = read_generations(tmp_path / "hf" / "demo" / "generations.jsonl")
    openai = read_generations(tmp_path / "openai" / "demo" / "generations.jsonl")
    assert len(hf) == 4
    assert {k: r["completion"] for k, r in openai.items()} == {k: r["completion"] for k, r in hf.items()}
