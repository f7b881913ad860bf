"""Paginated JSON shards next to the page, loadable from file:// without a server.

Browsers refuse `fetch()` of a file:// URL, so a shard is a JSON value wrapped in one call,

    factrlShard("viewer/runs/<key>/steps/3-0.js", {...JSON...});

that the page loads on demand with a `<script src>` element (allowed by its Content-Security-
Policy: scripts from the site's own files only, no inline script, no network). The key is the
shard's path from the site root, so the page knows which request it answers. The payload is
`json.dumps` output, a JavaScript literal that cannot end the call early; text in it is shown by
the page with `textContent`, never parsed as HTML. Every write is atomic.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from factrl.harness.core.rundir import atomic_write

CALLBACK = "factrlShard"


def _finite(value: Any) -> Any:
    """A copy with NaN and infinities as null (JSON has no such numbers)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)


def text(key: str, data: Any) -> str:
    try:
        payload = _dumps(data)
    except ValueError:  # a NaN in a record (a failed score): null
        payload = _dumps(_finite(data))
    # U+2028/2029 are legal in JSON and in modern JavaScript strings; escaped anyway for older engines.
    payload = payload.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f"{CALLBACK}({json.dumps(key)},{payload});\n"


def write(out: Path, key: str, data: Any) -> Path:
    """Write the shard `key` (a path under `out`, ending in .js); returns its path."""
    path = out / key
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, text(key, data))


def read(path: Path) -> tuple[str, Any]:
    """(key, data) of a shard file (tests and tools)."""
    body = path.read_text(encoding="utf-8").strip()
    if not body.startswith(CALLBACK + "(") or not body.endswith(");"):
        raise ValueError(f"{path}: not a shard")
    decoder = json.JSONDecoder()
    key, end = decoder.raw_decode(body, len(CALLBACK) + 1)
    data, _ = decoder.raw_decode(body, end + 1)
    return key, data
