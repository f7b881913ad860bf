"""Open an index with the real engine in a child process and count one n-gram.

The engine segfaults instead of raising on a bad index, so the first contact with an index
(right after a build, or the first use of an index built elsewhere) happens here, where a
crash kills only the child. Usage: python -m factrl.harness.services.corpus.probe SPEC_JSON.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from ...core.errors import DataError


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    from infini_gram.engine import InfiniGramEngine

    engine = InfiniGramEngine(index_dir=spec["engine_path"], eos_token_id=spec["eos_token_id"],
                              vocab_size=spec["vocab_size"], version=4, token_dtype=spec["token_dtype"],
                              max_clause_freq=500000, max_diff_tokens=1000)
    ids = spec["ids"]
    out = {"count": engine.count(ids)}
    if ids:
        out["count_cnf"] = engine.count_cnf([[ids], [ids]])
    return out


def probe(engine_path: str, token_dtype: str, vocab_size: int, eos_token_id: int, ids: list[int],
          timeout: float = 300.0) -> dict[str, Any]:
    """Counts of `ids` from a child process; DataError when the engine crashes or errs."""
    spec = {"engine_path": engine_path, "token_dtype": token_dtype, "vocab_size": int(vocab_size),
            "eos_token_id": int(eos_token_id), "ids": [int(i) for i in ids]}
    env = dict(os.environ, OMP_NUM_THREADS="1")
    try:
        done = subprocess.run([sys.executable, "-m", __name__, json.dumps(spec)], capture_output=True, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise DataError(f"index {engine_path}: the engine did not answer a test query within {timeout:.0f} s.") from None
    if done.returncode != 0:
        how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit status {done.returncode}"
        tail = (done.stderr.strip().splitlines() or [""])[-1][:300]
        raise DataError(f"index {engine_path}: the engine crashed on a test query ({how}) {tail}; the index "
                        f"files are damaged or do not match token_dtype={token_dtype}. Rebuild the index.")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for value in result.values():
        if "error" in value:
            raise DataError(f"index {engine_path}: the engine rejected a test query: {value['error']}.")
    return result


if __name__ == "__main__":
    print(json.dumps(_child(json.loads(sys.argv[1]))))
