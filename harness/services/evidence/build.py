"""Build an evidence store: documents -> passages -> one SQLite file with an FTS5 index.

Sources: a JSONL file (`title` and `text` fields, names configurable; .jsonl.gz too) or
the demo Wikipedia lead sections, read through the corpus service's readers. The file is
written under a temporary name beside the target and renamed into place, so a reader sees
no store or a complete one; an interrupted build leaves only the temporary file, which the
next build replaces (a demo build takes seconds: redoing is cheaper than resuming).
A store whose manifest settings equal the requested ones is reused, unless `force`.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from ...core.errors import DataError, HarnessError
from ...core.filelock import locked
from ...core.hashing import sha256_file
from ...core.rundir import atomic_path
from .passages import DEFAULT_TOKENIZER, SPLIT_VERSION, load_splitter, split_documents
from .schema import FORMAT_VERSION, FTS_TOKENIZE, Manifest, create_tables, manifest_hash, read_manifest

log = logging.getLogger(__name__)

BATCH_DOCS = 256
DEMO_KIND, FILE_KIND = "demo", "jsonl"


def _source(source: str | os.PathLike | None) -> tuple[str, Path]:
    from ..corpus.sources import demo_corpus_path

    if source is None or str(source) == DEMO_KIND:
        return DEMO_KIND, demo_corpus_path()
    path = Path(os.path.expanduser(str(source)))
    if not path.is_file():
        raise DataError(f"evidence source {source}: no such file; give a JSONL file with 'title' and 'text' "
                        f"fields, or --demo.")
    if not path.name.endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        raise DataError(f"evidence source {path}: expected .jsonl or .jsonl.gz (one {{title, text}} object "
                        f"per line).")
    return FILE_KIND, path


def _asset_version() -> str:
    from importlib import metadata

    from ..corpus.sources import DEMO_PIP

    try:
        return f"{DEMO_PIP}=={metadata.version(DEMO_PIP)}"
    except metadata.PackageNotFoundError:
        return f"{DEMO_PIP}==unknown"


def _documents(kind: str, path: Path, text_field: str, title_field: str) -> Iterator[tuple[str, str]]:
    from ..corpus.sources import iter_documents

    empty: list[str] = []  # records with no text: they hold no passage, and are reported, not hidden
    for doc in iter_documents([str(path)], text_field=text_field, keep=(title_field,), skipped=empty):
        key = "title" if kind == DEMO_KIND else title_field
        title = doc.meta.get(key)
        where = f"{path}:{doc.meta.get('line', '?')}"
        if isinstance(title, str) and not title.strip():
            raise DataError(f"{where}: field '{title_field}' is empty; every document needs its article title.")
        if not isinstance(title, str):
            raise DataError(f"{where}: no string field '{title_field}'; set --title-field to the field that "
                            f"holds the article title.")
        yield title.strip(), doc.text
    if empty:
        log.warning("evidence build: skipped %d record(s) with empty '%s' (first: %s)", len(empty), text_field,
                    empty[0])


def _settings(kind: str, path: Path, splitter, passage_tokens: int, text_field: str, title_field: str
              ) -> dict[str, Any]:
    """What the manifest records about the inputs and the rules; equal settings = same store."""
    source = {"kind": kind, "path": str(path.resolve()), "bytes": path.stat().st_size,
              "sha256": sha256_file(path), "text_field": text_field, "title_field": title_field}
    if kind == DEMO_KIND:
        source.update(asset=_asset_version(), text_field="extract", title_field="title")
    return {"format_version": FORMAT_VERSION, "split_version": SPLIT_VERSION, "source": source,
            "tokenizer": splitter.describe(), "passage_tokens": passage_tokens,
            "fts": {"tokenize": FTS_TOKENIZE, "columns": ["title", "text"]}}


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def key(s):
        src = {k: v for k, v in s["source"].items() if k != "path"}
        tok = {k: v for k, v in s["tokenizer"].items() if k not in ("name_or_path", "spec")}
        return [s["format_version"], s["split_version"], src, tok, s["passage_tokens"], s["fts"]]
    return key(a) == key(b)


def _write(db: Path, docs: Iterator[tuple[str, str]], splitter, passage_tokens: int, progress: bool | None
           ) -> dict[str, Any]:
    from tqdm import tqdm

    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = OFF")  # a temporary file: a crash means rebuild, not recover
    conn.execute("PRAGMA synchronous = OFF")
    create_tables(conn)
    content = hashlib.sha256()
    counts = {"documents": 0, "passages": 0, "max_passage_tokens": 0}
    titles: set[str] = set()
    conn.execute("BEGIN")
    bar = tqdm(desc="evidence passages", unit=" docs", disable=(not progress) if progress is not None else None,
               mininterval=1.0)

    def flush(batch: list[tuple[str, str]]) -> None:
        split = split_documents(splitter, [text for _, text in batch], passage_tokens)
        rows = []
        for (title, _), passages in zip(batch, split):
            if not passages:
                continue
            doc_index = counts["documents"]
            counts["documents"] += 1
            titles.add(title)
            for chunk, passage in enumerate(passages):
                counts["passages"] += 1
                rows.append((counts["passages"], title, passage, doc_index, chunk))
                for part in (title, passage):
                    encoded = part.encode("utf-8")
                    content.update(len(encoded).to_bytes(8, "little") + encoded)
            counts["max_passage_tokens"] = max([counts["max_passage_tokens"], *splitter.count(passages)])
        conn.executemany("INSERT INTO passages VALUES (?, ?, ?, ?, ?)", rows)
        bar.update(len(batch))

    batch: list[tuple[str, str]] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) == BATCH_DOCS:
            flush(batch)
            batch = []
    if batch:
        flush(batch)
    bar.close()
    if counts["passages"] == 0:
        conn.execute("ROLLBACK")
        conn.close()
        raise DataError("the evidence source has no non-empty documents; check --text-field.")
    conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO passages_fts(passages_fts) VALUES ('optimize')")
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.close()
    return {"counts": {**counts, "titles": len(titles)}, "content_sha256": content.hexdigest()}


def _store_manifest(db: Path, manifest: dict[str, Any]) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executemany("INSERT OR REPLACE INTO manifest VALUES (?, ?)",
                     [(k, json.dumps(v, ensure_ascii=False)) for k, v in manifest.items()])
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()


def build_store(source: str | os.PathLike | None, out: str | os.PathLike, *, force: bool,
                tokenizer: str = DEFAULT_TOKENIZER, passage_tokens: int | None = None, text_field: str = "text",
                title_field: str = "title", progress: bool | None = None) -> Manifest:
    """Build (or reuse) the evidence store of `source` (a JSONL path, or None / "demo") at `out`;
    `force`: rebuild an existing store (`harness evidence build --force`), every caller says which.
    passage_tokens: None is evidence.passage_tokens of configs/evidence/demo.yaml."""
    passage_tokens = _passage_tokens(passage_tokens)
    kind, path = _source(source)
    target = Path(os.path.expanduser(str(out))).resolve()
    if target.is_dir():
        raise HarnessError(f"--out {out}: is a directory; give a file path such as {target / 'evidence.sqlite3'}.")
    splitter = load_splitter(tokenizer)
    settings = _settings(kind, path, splitter, passage_tokens, text_field, title_field)
    with locked(target):
        if target.exists() and not force:
            old = read_manifest(target)
            if _same(old.data, settings):
                log.info("evidence store %s exists with these settings; reusing it (pass --force to rebuild)", target)
                return old
            raise HarnessError(f"evidence store {target} exists and was built from other settings (source, "
                               f"tokenizer or passage size); pass --force to rebuild it or choose another --out.")
        started = time.time()
        with atomic_path(target) as tmp:  # swapped in whole, or not at all
            written = _write(tmp, _documents(kind, path, text_field, title_field), splitter, passage_tokens,
                             progress)
            manifest = {"schema": "factrl.evidence.manifest/1", **settings, **written}
            manifest["manifest_hash"] = manifest_hash(manifest)
            manifest["created"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            manifest["build_seconds"] = round(time.time() - started, 2)
            _store_manifest(tmp, manifest)
        log.info("built evidence store %s: %d documents, %d passages in %.1f s", target,
                 written["counts"]["documents"], written["counts"]["passages"], manifest["build_seconds"])
        return read_manifest(target)


def _passage_tokens(given: int | None) -> int:
    from .settings import EvidenceSettings

    return int(EvidenceSettings.from_mapping().passage_tokens) if given is None else int(given)


def demo_store_path(tokenizer: str = DEFAULT_TOKENIZER, passage_tokens: int | None = None) -> Path:
    """Where the demo store for these settings lives: keyed by format, split rule, asset
    version, the lead sections' bytes and the tokenizer's fingerprint (passage_tokens: None is
    evidence.passage_tokens)."""
    passage_tokens = _passage_tokens(passage_tokens)
    from ..corpus.sources import demo_corpus_path
    from ..models import cache_dir

    source = demo_corpus_path()
    tok = load_splitter(tokenizer).describe()
    stamp = json.dumps([FORMAT_VERSION, SPLIT_VERSION, _asset_version(), sha256_file(source), tok["fingerprint"],
                        passage_tokens])
    name = "".join(c if c.isalnum() or c in "-_." else "-" for c in str(tokenizer).split("/")[-1])
    key = hashlib.sha256(stamp.encode()).hexdigest()[:10]
    return cache_dir() / "evidence" / f"demo-{name}-{passage_tokens}-{key}.sqlite3"


def ensure_demo_store(tokenizer: str = DEFAULT_TOKENIZER, passage_tokens: int | None = None) -> Path:
    """The demo store (10k Wikipedia lead sections), built once under the harness cache."""
    passage_tokens = _passage_tokens(passage_tokens)
    target = demo_store_path(tokenizer, passage_tokens)
    if not target.is_file():
        log.info("building the demo evidence store in %s (once; a few seconds)", target)
        build_store(None, target, tokenizer=tokenizer, passage_tokens=passage_tokens, force=False)
    return target
