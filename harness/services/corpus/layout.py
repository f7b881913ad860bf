"""On-disk layout of an infini-gram index and the checks that run before the engine sees it.

Format (infini-gram 2.6.0, index version 4), one set of files per shard `i`:
- `tokenized.i`: every document as a separator (token width bytes of 0xFF) followed by its
  token ids, little-endian, token width 2 (u16) or 4 (u32) bytes;
- `table.i`: the suffix array, one pointer per token position, `ptr_bytes` bytes each,
  little-endian byte offsets into `tokenized.i`, sorted by the bytes that follow them;
- `offset.i`: u64 byte offset of each document's separator in `tokenized.i`;
- optional `metadata.i` (one JSON line per document) and `metaoff.i` (u64 offsets into it).
The harness adds `harness_index.json`, the manifest (see build.py).

The engine finds its files by substring over each entry's full path ("tokenized", "table",
"offset", "metadata", "metaoff", "unigram"), asserts nothing in release builds, and
dereferences whatever it mapped: a stray file, a path containing one of these words, a
truncated file or the wrong token width is a segfault. Everything here is checked in
Python first, and a failure is a HarnessError naming the file and the fix.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import DataError, HarnessError

MANIFEST = "harness_index.json"
MANIFEST_SCHEMA = "factrl.corpus.index/1"
ENGINE_WORDS = ("tokenized", "table", "offset", "metadata", "metaoff", "unigram")
_SHARD_FILE = re.compile(r"^(tokenized|table|offset|metadata|metaoff|unigram)\.(\d+)$")
WIDTHS = {"u16": 2, "u32": 4}


@dataclass
class Shard:
    tokenized: Path
    table: Path
    offset: Path
    tokens: int
    documents: int
    ptr_bytes: int


@dataclass
class IndexInfo:
    """A validated index directory, ready for the engine."""

    path: Path
    token_dtype: str
    shards: list[Shard]
    manifest: dict[str, Any] | None  # None for an index built elsewhere (no manifest)
    manifest_hash: str
    engine_path: str = ""  # the path string handed to the engine (see engine_path())
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def width(self) -> int:
        return WIDTHS[self.token_dtype]

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.shards)

    @property
    def documents(self) -> int:
        return sum(s.documents for s in self.shards)


def expected_ptr_bytes(ds_size: int) -> int:
    """Pointer width the bundled indexer uses: enough bytes to address the data file."""
    return max(1, math.ceil(math.log2(ds_size) / 8)) if ds_size > 1 else 1


def path_problem(path: str | os.PathLike) -> str | None:
    """Why the engine would misread files under `path`, or None."""
    text = str(path)
    for word in ENGINE_WORDS:
        if word in text:
            return f"the path contains '{word}', which the engine uses to recognise its files"
    return None


def engine_path(index_dir: Path) -> str:
    """A path string for the engine that contains none of its file-type words.

    When the real path does (e.g. ~/timetables/wiki), a symlink under the temporary
    directory stands in for it; when that is impossible the caller gets a HarnessError.
    """
    real = index_dir.resolve()
    if path_problem(real) is None:
        return str(real)
    links = Path(tempfile.gettempdir()) / "factrl-index-links"
    link = links / hashlib.sha256(str(real).encode()).hexdigest()[:16]
    if path_problem(link) is None:
        links.mkdir(parents=True, exist_ok=True)
        if not (link.is_symlink() and link.resolve() == real):
            tmp = links / f".{link.name}.{os.getpid()}"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(real, target_is_directory=True)
            os.replace(tmp, link)  # atomic: concurrent openers agree on the link
        return str(link)
    raise HarnessError(f"index {real}: {path_problem(real)} (and so does the temporary directory); "
                       f"move the index to a path without {', '.join(ENGINE_WORDS)}.")


def read_manifest(index_dir: Path) -> dict[str, Any] | None:
    path = index_dir / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: unreadable manifest ({err}); rebuild the index with `harness index build`.") from None
    if data.get("schema") != MANIFEST_SCHEMA:
        raise DataError(f"{path}: schema {data.get('schema')!r}, expected {MANIFEST_SCHEMA}; rebuild the index.")
    return data


def content_hash(manifest: dict[str, Any]) -> str:
    """Hash of what decides counts: tokenizer fingerprint, width, corpus content and data
    files; not paths, host or build time, so a copied or rebuilt identical index keeps its
    cached counts."""
    tokenizer = manifest.get("tokenizer") or {}
    corpus = manifest.get("corpus") or {}
    blob = json.dumps({
        "schema": manifest.get("schema"), "format_version": manifest.get("format_version"),
        "index_version": manifest.get("index_version"), "token_dtype": manifest.get("token_dtype"),
        "tokenizer": [tokenizer.get("fingerprint"), tokenizer.get("vocab_size"), tokenizer.get("eos_token_id")],
        "corpus": [corpus.get("sha256"), corpus.get("text_field"), corpus.get("split_lines")],
        "documents": manifest.get("documents"), "tokens": manifest.get("tokens"),
        "shards": [{k: (v.get("bytes"), v.get("sha256")) for k, v in shard.items()}
                   for shard in manifest.get("shards") or []],
    }, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def foreign_hash(index_dir: Path, token_dtype: str) -> str:
    """Identity of an index without a manifest: file names, sizes, mtimes and width."""
    entries = sorted((p.name, p.stat().st_size, int(p.stat().st_mtime)) for p in index_dir.iterdir()
                     if _SHARD_FILE.match(p.name))
    blob = json.dumps({"dir": str(index_dir.resolve()), "files": entries, "token_dtype": token_dtype})
    return hashlib.sha256(blob.encode()).hexdigest()


def _shard_files(index_dir: Path) -> dict[str, dict[int, Path]]:
    found: dict[str, dict[int, Path]] = {w: {} for w in ENGINE_WORDS}
    for entry in index_dir.iterdir():
        match = _SHARD_FILE.match(entry.name)
        if match and entry.is_file():
            found[match.group(1)][int(match.group(2))] = entry
        elif any(word in entry.name for word in ENGINE_WORDS):
            raise DataError(f"index {index_dir}: stray entry '{entry.name}'; the engine would load it as an "
                            f"index file. Move it out of the index directory.")
    return found


def _check_shard(index_dir: Path, i: int, files: dict[str, dict[int, Path]], width: int,
                 sep_samples: int) -> Shard:
    ds, sa, od = files["tokenized"].get(i), files["table"].get(i), files["offset"].get(i)
    for kind, path in (("tokenized", ds), ("table", sa), ("offset", od)):
        if path is None:
            raise DataError(f"index {index_dir}: {kind}.{i} is missing; rebuild the index.")
    ds_size, sa_size, od_size = ds.stat().st_size, sa.stat().st_size, od.stat().st_size
    where = f"index {index_dir}, shard {i}"
    if ds_size == 0 or ds_size % width:
        raise DataError(f"{where}: tokenized.{i} has {ds_size} bytes, not a positive multiple of the token "
                        f"width {width}; the file is truncated or the token_dtype is wrong.")
    tokens = ds_size // width
    if sa_size % tokens or sa_size // tokens != expected_ptr_bytes(ds_size):
        raise DataError(f"{where}: table.{i} has {sa_size} bytes for {tokens} tokens (expected "
                        f"{tokens * expected_ptr_bytes(ds_size)}); the table is truncated or the token width "
                        f"({width} bytes) does not match the index. Rebuild it or fix corpus.token_dtype.")
    if od_size == 0 or od_size % 8:
        raise DataError(f"{where}: offset.{i} has {od_size} bytes, not a positive multiple of 8; rebuild the index.")
    offsets = np.memmap(od, dtype="<u8", mode="r")
    documents = len(offsets)
    sep = b"\xff" * width
    if offsets[0] != 0 or offsets[-1] >= ds_size or (documents > 1 and bool(np.any(np.diff(offsets) <= 0))):
        raise DataError(f"{where}: offset.{i} is not an increasing list of positions inside tokenized.{i}; "
                        f"rebuild the index.")
    picks = np.unique(np.linspace(0, documents - 1, num=min(documents, sep_samples)).astype(np.int64))
    with open(ds, "rb") as handle:
        for k in picks:
            handle.seek(int(offsets[k]))
            if handle.read(width) != sep:
                raise DataError(f"{where}: document {int(k)} does not start with the {width}-byte separator; "
                                f"the token width does not match the index (set corpus.token_dtype) or "
                                f"tokenized.{i} is damaged.")
    _check_pointers(where, sa, ds_size, tokens, sa_size // tokens, width, sep_samples)
    if (i in files["metadata"]) != (i in files["metaoff"]):
        raise DataError(f"{where}: metadata.{i} and metaoff.{i} must both exist or both be absent.")
    if i in files["metaoff"] and files["metaoff"][i].stat().st_size != documents * 8:
        raise DataError(f"{where}: metaoff.{i} does not have one offset per document; rebuild the index.")
    del offsets
    return Shard(ds, sa, od, tokens, documents, sa_size // tokens)


def _check_pointers(where: str, table: Path, ds_size: int, tokens: int, ptr_bytes: int, width: int,
                    samples: int) -> None:
    """Sampled suffix-array entries must be aligned positions inside the data file: an
    overwritten table makes the engine read outside its mapping."""
    entries = np.memmap(table, dtype=np.uint8, mode="r")
    ranks = np.unique(np.linspace(0, tokens - 1, num=min(tokens, samples)).astype(np.int64))
    raw = np.zeros((len(ranks), 8), dtype=np.uint8)
    for k in range(ptr_bytes):
        raw[:, k] = entries[ranks * ptr_bytes + k]
    pointers = raw.view("<u8").ravel()
    del entries
    if np.any(pointers >= ds_size) or np.any(pointers % width):
        raise DataError(f"{where}: {table.name} holds positions outside the data file; the table is damaged. "
                        f"Rebuild the index.")


def inspect_index(index_dir: str | os.PathLike, token_dtype: str | None = None,
                  sep_samples: int = 256) -> IndexInfo:
    """Validate an index directory without touching the engine; raise DataError if unsafe."""
    path = Path(os.path.expanduser(str(index_dir)))
    if not path.is_dir():
        raise DataError(f"index {path}: no such directory. Build one with `harness index build` "
                        f"or fix corpus.index_dir.")
    manifest = read_manifest(path)
    if manifest is not None:
        recorded = manifest.get("token_dtype")
        if token_dtype and token_dtype != recorded:
            raise DataError(f"index {path}: built with token_dtype {recorded}, but {token_dtype} was requested; "
                            f"drop corpus.token_dtype (the manifest decides) or use the right index.")
        token_dtype = recorded
    if token_dtype not in WIDTHS:
        raise DataError(f"index {path}: no {MANIFEST} and no valid corpus.token_dtype ({token_dtype!r}); "
                        f"an index built elsewhere needs token_dtype=u16 or u32.")
    files = _shard_files(path)
    numbers = sorted(set(files["tokenized"]) | set(files["table"]) | set(files["offset"]))
    if not numbers:
        raise DataError(f"index {path}: no tokenized.*, table.* or offset.* files; this is not an infini-gram index.")
    for kind in ("tokenized", "table", "offset"):
        for i in numbers:
            if i not in files[kind]:
                raise DataError(f"index {path}: {kind}.{i} is missing; rebuild the index.")
    if numbers != list(range(len(numbers))):
        raise DataError(f"index {path}: shard numbers are {numbers}, expected 0..{len(numbers) - 1}; rebuild it.")
    shards = [_check_shard(path, i, files, WIDTHS[token_dtype], sep_samples) for i in numbers]
    if manifest is not None:
        _check_against_manifest(path, manifest, shards)
        digest = manifest.get("hash") or content_hash(manifest)
    else:
        digest = foreign_hash(path, token_dtype)
    return IndexInfo(path=path.resolve(), token_dtype=token_dtype, shards=shards, manifest=manifest,
                     manifest_hash=digest)


def _check_against_manifest(path: Path, manifest: dict[str, Any], shards: list[Shard]) -> None:
    recorded = manifest.get("shards") or []
    if len(recorded) != len(shards):
        raise DataError(f"index {path}: the manifest lists {len(recorded)} shards, the directory has "
                        f"{len(shards)}; rebuild the index.")
    for shard, entry in zip(shards, recorded):
        for kind in ("tokenized", "table", "offset"):
            file = getattr(shard, kind)
            want = (entry.get(kind) or {}).get("bytes")
            if file.stat().st_size != want:
                raise DataError(f"index {path}: {file.name} has {file.stat().st_size} bytes, the manifest says "
                                f"{want}; the file is truncated or was replaced. Rebuild the index.")
