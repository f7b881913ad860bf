"""train/components.json: which reward components produced a run's result.

The method describes its components (`Method.components(reward)`); this module checks the
description against the contract, writes it next to the checkpoints and reads it back, so a
resumed or already-finished run reports the same components as the attempt that trained.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from ..core.method import Method
from ..core.rundir import read_json, write_json

log = logging.getLogger(__name__)

SCHEMA = "factrl.components/1"
FILENAME = "components.json"
REQUIRED = ("kind", "backend", "model", "revision", "stand_in", "label")


def check_components(method_name: str, components: Any) -> dict[str, dict[str, Any]]:
    """`components` as the contract wants it, or a TypeError naming the method and the entry."""
    where = f"method '{method_name}': components()"
    if not isinstance(components, dict):
        raise TypeError(f"{where} must return a dict of name -> entry, got {type(components).__name__}")
    for name, entry in components.items():
        if not isinstance(entry, dict):
            raise TypeError(f"{where}['{name}'] must be a dict, got {type(entry).__name__}")
        missing = [key for key in REQUIRED if key not in entry]
        if missing:
            raise TypeError(f"{where}['{name}'] lacks {', '.join(missing)}")
        if not isinstance(entry["stand_in"], bool):
            raise TypeError(f"{where}['{name}']['stand_in'] must be true or false")
        if entry["stand_in"] and not entry.get("note"):
            raise TypeError(f"{where}['{name}'] is a stand-in: give a 'note' saying what it replaces")
        try:
            json.dumps(entry)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{where}['{name}'] is not plain JSON: {err}") from None
    return components


def stand_in_names(components: dict[str, dict[str, Any]] | None) -> list[str]:
    """Sorted names of the components marked as stand-ins."""
    return sorted(name for name, entry in (components or {}).items() if entry.get("stand_in") is True)


def read_components(train_dir: Path) -> dict[str, dict[str, Any]] | None:
    """The components a run's training recorded, or None when it recorded none (older runs)."""
    file = Path(train_dir) / FILENAME
    return read_json(file).get("components", {}) if file.is_file() else None


def write_components(train_dir: Path, method: Method, reward: Any,
                     engine: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Describe `reward`'s components (plus the training engine's own entries, `engine`:
    `optimizer`, `advantages`) and write train/components.json; returns them.

    A resumed run normally finds the same description. When it differs (say the extractor
    checkpoint in the cache changed between attempts), the new one is written with the old
    one kept under `previous` and a warning, since the result then mixes both.
    """
    components = check_components(method.name, method.components(reward))
    clash = sorted(set(components) & set(engine or {}))
    if clash:
        raise TypeError(f"method '{method.name}': components() uses the name(s) {', '.join(clash)}, which the "
                        f"training engine records itself; rename them")
    components = {**components, **check_components("engine", engine or {})}
    file = Path(train_dir) / FILENAME
    document: dict[str, Any] = {"schema": SCHEMA, "method": method.name, "method_version": method.version,
                                "components": components}
    if file.is_file():
        earlier = read_json(file)
        if earlier.get("components") == components:
            return components
        log.warning("reward components changed since the earlier attempt (%s); the result mixes both, "
                    "see %s", ", ".join(sorted(_changed(earlier.get("components") or {}, components))), file)
        document["previous"] = earlier
    write_json(file, document)
    return components


def _changed(old: dict, new: dict) -> set[str]:
    return {name for name in set(old) | set(new) if old.get(name) != new.get(name)}
