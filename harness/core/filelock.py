"""One builder per output at a time: an advisory lock beside the target.

Used by the builders of shared cache artefacts (the corpus index, the evidence store), which
two trainers started at once may both ask for; the second waits, then finds the artefact built.
"""
from __future__ import annotations

import fcntl
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def locked(target: Path) -> Iterator[None]:
    """Hold an exclusive lock on `<target's folder>/.<target name>.lock` for the block."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
