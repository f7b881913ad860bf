"""Published files without machine paths: a rebuild from moved run directories (or another
machine's copy of them) publishes the same bytes.

The store keeps every path a row was recorded with (`source: run:/abs/run-dir`, the pool file,
`file:` evaluation sets, local model and store directories): that is local provenance. The
published site shows each absolute path by its last component (`run:<run_id>`, `nq.json`), which
names the same thing on any machine; `harness leaderboard publish --stamp` keeps the full paths
(and the generation time).
"""
from __future__ import annotations

import re
from typing import Any

# An absolute POSIX or home path, at the start of a value, after a space or parenthesis, or
# after a provenance prefix (run:, file:, import:). URLs are left alone: their "//" follows a
# scheme, which is none of these.
_PATH = re.compile(r"(?P<lead>^|[\s(=,]|\b(?:run|file|import|embedded):)(?P<path>(?:~|/)[^\s()'\",;]*)")


def _last(path: str) -> str:
    parts = [p for p in path.rstrip("/").split("/") if p not in ("", "~")]
    return parts[-1] if parts else path


def portable_text(text: str) -> str:
    """`text` with every absolute path replaced by its last component."""
    if "/" not in text:
        return text
    return _PATH.sub(lambda m: m.group("lead") + _last(m.group("path")), text)


def portable(value: Any) -> Any:
    """A copy of a row (or any JSON value) with `portable_text` applied to every string."""
    if isinstance(value, str):
        return portable_text(value)
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [portable(v) for v in value]
    return value
