"""Reference vectors (tests/reference_vectors/, README.md there): recorded by running the original
authors' code; a fidelity test takes its expected values from these files, never from our formulas."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent / "reference_vectors"


def load(source: str, name: str) -> dict[str, Any]:
    """tests/reference_vectors/<source>/<name>.json: {"source", "computed_by", "notes", "cases"}."""
    return json.loads((ROOT / source / f"{name}.json").read_text(encoding="utf-8"))


def cases(source: str, name: str) -> dict[str, dict[str, Any]]:
    """The file's cases by name (for `pytest.mark.parametrize` over names)."""
    return {case["name"]: case for case in load(source, name)["cases"]}
