"""The versioned leaderboard: a store of validated rows, tables in the CorVer paper's layouts,
and publishing to Markdown, CSV, LaTeX, HTML and plots. See leaderboard/README.md.

Public API (imported lazily, so `harness run` pays nothing until it records):
    record_run(run_dir, store_path=None, version=None, replace=False) -> list[str]
    add_run(...) -> AddReport (added / replaced / unchanged row ids)
    rows_from_run(run_dir, version=None) -> list[dict]
    Store(path): add(rows, replace=False) -> AddReport, rows(version, ...), remove(ids), versions(), pins(version)
    StoreError: a store that cannot be used (locked, corrupt, ...), one line naming the file
    publish(store_path, version, out_dir, ...) -> dict[str, Path]
    export_results(rows) -> dict; rows_from_results(data, source) -> list[dict]
    LEADERBOARD_VERSION, VERSIONS
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "record_run": "record", "add_run": "record", "rows_from_run": "record", "Store": "store", "RowRefused": "store",
    "AddReport": "store", "StoreError": "store.errors",
    "publish": "publishing", "export_results": "results", "rows_from_results": "results",
    "LEADERBOARD_VERSION": "store.versions", "VERSIONS": "store.versions",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
