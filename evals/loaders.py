"""Reading evaluation data: local files in every format we accept, and the Hugging Face hub.

Rows come in as plain dicts; the per-task parsers turn them into `Record`s and name the
file, the record index and the field when something is malformed. Accepted local formats:
`.json` (a list, or an object holding the list under "Data"/"data"), `.jsonl`, `.csv`
(upstream SimpleQA and TruthfulQA ship CSV) and `.parquet` (hub exports).

The hub is tried only when it is reachable: a 3-second connection probe fails fast where
`datasets` would retry for about 25 s, and the error says how to pass a local file instead.
"""
from __future__ import annotations

import csv
import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlparse

from factrl.harness.core.errors import DataError


@dataclass(frozen=True)
class Record:
    """One question of an evaluation set.

    references: what counts as right. Closed-book: the answer then its aliases; TruthfulQA:
        the correct answers (best answer first); multi-hop: answer, aliases, demonyms.
    incorrect: TruthfulQA's incorrect answers (empty elsewhere).
    """

    id: str
    question: str
    references: tuple[str, ...]
    incorrect: tuple[str, ...] = ()


def read_rows(path: Path) -> list[dict]:
    """All rows of a local data file as dicts (see module docstring for formats)."""
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path}: is a folder, not a data file; name the set's file (eval.data.<set>=FILE, "
                        f"harness score --data FILE) or pass the folder as eval.data_dir / --data-dir.")
    if not path.is_file():
        raise DataError(f"{path}: no such file.")
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path).to_pylist()
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text (byte {err.start}).") from None
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err}).") from None
    if suffix == ".csv":
        return list(csv.DictReader(text.splitlines()))
    if suffix == ".jsonl":
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise DataError(f"{path}:{number}: invalid JSON ({err.msg}).") from None
        return rows
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(f"{path}: invalid JSON at line {err.lineno} ({err.msg}).") from None
    if isinstance(data, dict):
        for key in ("Data", "data"):  # the original TriviaQA files wrap the list
            if isinstance(data.get(key), list):
                return data[key]
        raise DataError(f"{path}: a JSON object without a 'Data' or 'data' list; expected a list of records.")
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of records, got {type(data).__name__}.")
    return data


# --------------------------------------------------------------------------------------------
# Field helpers: every error names where (file), which record and which field.
# --------------------------------------------------------------------------------------------
class Fields:
    """Typed access to one raw row; errors name file, record index and field."""

    def __init__(self, row: Any, index: int, where: str):
        if not isinstance(row, dict):
            raise DataError(f"{where}: record {index}: expected an object, got {type(row).__name__}.")
        self.row, self.index, self.where = row, index, where

    def fail(self, field: str, problem: str) -> DataError:
        return DataError(f"{self.where}: record {self.index}: field '{field}' {problem}.")

    def first(self, *names: str) -> str | None:
        """The first of `names` present in the row (None when none is)."""
        return next((n for n in names if n in self.row), None)

    def text(self, *names: str) -> str:
        """A required non-empty string field (the first present of `names`)."""
        name = self.first(*names)
        if name is None:
            raise self.fail("/".join(names), "is missing")
        value = self.row[name]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(name, f"must be a non-empty string, got {_show(value)}")
        return value

    def strings(self, name: str, *, split: str | None = None, required: bool = True,
                json_list: bool = False) -> list[str]:
        """A list of strings; also accepts a JSON-encoded list (`json_list`, PopQA's
        possible_answers) or a `split`-joined string (TruthfulQA's CSV)."""
        if name not in self.row or self.row[name] is None:
            if required:
                raise self.fail(name, "is missing")
            return []
        value = self.row[name]
        if isinstance(value, str):
            if json_list:
                try:
                    value = json.loads(value)
                except json.JSONDecodeError:
                    raise self.fail(name, "looks like a JSON list but does not parse") from None
            elif split is not None:
                value = [part.strip() for part in value.split(split) if part.strip()]
            else:
                value = [value]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise self.fail(name, f"must be a list of strings, got {_show(value)}")
        return list(value)


def _show(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def dedupe(values: list[str]) -> tuple[str, ...]:
    """Order-preserving de-duplication (exact strings)."""
    return tuple(dict.fromkeys(values))


ID_FIELDS = ("id", "_id", "question_id", "QuestionId", "query_id")


def assign_ids(rows: list[dict], records: list[Record]) -> list[Record]:
    """Keep upstream ids when every row has one and they are unique; else use row indexes.

    Index ids ("0", "1", ...) are stable under `limit` and for files without ids (the shared
    closed-book files); duplicated upstream ids would make predictions ambiguous.
    """
    ids = []
    for row in rows:
        field = next((f for f in ID_FIELDS if isinstance(row, dict) and row.get(f) not in (None, "")), None)
        if field is None:
            break
        ids.append(str(row[field]))
    if len(ids) != len(records) or len(set(ids)) != len(ids):
        ids = [str(i) for i in range(len(records))]
    return [Record(i, r.question, r.references, r.incorrect) for i, r in zip(ids, records)]


def parse_rows(rows: list[dict], parser: Callable[[Fields], Record], where: str) -> list[Record]:
    records = [parser(Fields(row, index, where)) for index, row in enumerate(rows)]
    return assign_ids(rows, records)


# --------------------------------------------------------------------------------------------
# The hub
# --------------------------------------------------------------------------------------------
def hub_reachable(timeout: float = 3.0) -> bool:
    if os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("HF_DATASETS_OFFLINE") == "1":
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def load_hub(repo: str, config: str | None, split: str, revision: str | None,
             hint: str) -> tuple[list[dict], str]:
    """Rows of a hub dataset split and the commit they came from.

    A copy in the local `datasets` cache is used when the hub is unreachable; otherwise the
    error says how to pass a local file (`hint`).
    """
    import datasets

    online = hub_reachable()
    what = f"{repo}{f' ({config})' if config else ''}, split {split}"
    try:
        if online:
            ds = datasets.load_dataset(repo, config, split=split, revision=revision)
        else:
            ds = _load_cached(repo, config, split, revision)
    except Exception as err:  # noqa: BLE001 - every failure becomes one actionable line
        reason = "the hub is not reachable" if not online else f"loading failed ({type(err).__name__}: {err})"
        raise DataError(f"cannot load {what}: {reason}. {hint}") from None
    resolved = revision or "main"
    if online:
        try:
            from huggingface_hub import HfApi

            resolved = HfApi().dataset_info(repo, revision=revision, timeout=10).sha or resolved
        except Exception:  # noqa: BLE001 - the commit is informative only
            pass
    return ds.to_list(), resolved


def _load_cached(repo: str, config: str | None, split: str, revision: str | None):
    import datasets

    # Without the network `datasets` still finds a split it cached before, if offline mode is on.
    previous = datasets.config.HF_HUB_OFFLINE
    datasets.config.HF_HUB_OFFLINE = True
    try:
        return datasets.load_dataset(repo, config, split=split, revision=revision)
    finally:
        datasets.config.HF_HUB_OFFLINE = previous
