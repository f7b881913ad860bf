"""Build an infini-gram index offline: tokenise, write the data files, sort the suffixes.

The package's own indexer only loads hub tokenizers, so this module writes `tokenized.0`,
`offset.0`, `metadata.0` and `metaoff.0` itself and runs the bundled `rust_indexing`
binary (make-part, merge, concat) for the suffix array. Pitfalls measured on this machine
and handled here:
- several CPUs on a small corpus write a corrupt table (and exit 101) -> one CPU below
  `PARALLEL_MIN_BYTES`, exit codes checked, and the table verified before use;
- the indexer's default open-files limit is above this machine's hard limit -> the soft
  limit is raised only up to the hard limit;
- paths containing `table` (or another engine file word) -> see layout.engine_path;
- u16 vs u32 from the vocabulary size, recorded in the manifest;
- byte-level BPE leaves a string's first word without its boundary mark -> documents are
  tokenised as running text (index format 2, formats.py).
A build happens in a staging directory and is renamed into place, under a file lock, so a
concurrent user sees either no index or a complete one.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import resource
import shutil
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ...core.errors import DataError, HarnessError
from ...core.filelock import locked
from ...core.hashing import sha256_file
from . import layout, probe
from .formats import FORMAT_VERSION, check_format
from .sources import describe_inputs, iter_documents
from .tokens import TokenizerIdentity, document_prefix, encode_documents, token_dtype_for

log = logging.getLogger(__name__)

HACK = 100_000  # overlap between suffix-array parts, in bytes (the binary's --hacksize)
PARALLEL_MIN_BYTES = 64 << 20  # below this, one CPU: several CPUs corrupt tiny tables
BYTES_PER_JOB = 32 << 20
WANTED_OPEN_FILES = 1 << 20
BATCH_DOCS = 512
_VERIFY_ALL_BELOW = 300_000  # tokens; larger tables are verified on a random sample
_VERIFY_SAMPLES = 50_000


def rust_indexing() -> Path:
    import infini_gram

    binary = Path(infini_gram.__file__).parent / "rust_indexing"
    if not os.access(binary, os.X_OK):
        raise HarnessError(f"{binary} is missing or not executable; reinstall `infini-gram==2.6.0`.")
    return binary


def _raise_open_files_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = WANTED_OPEN_FILES if hard == resource.RLIM_INFINITY else min(WANTED_OPEN_FILES, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def _run(args: list) -> subprocess.Popen:
    return subprocess.Popen([str(a) for a in args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, preexec_fn=_raise_open_files_limit)


def _wait(procs: list[subprocess.Popen], step: str) -> None:
    failures = []
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            failures.append(f"exit {proc.returncode}: {(err or '').strip().splitlines()[-1:] or ''}")
    if failures:
        raise DataError(f"suffix array step '{step}' failed ({'; '.join(map(str, failures))}).")


def _available_memory() -> int:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 4 << 30


def sort_memory(width: int) -> int:
    """Bytes one suffix-sort job of the bundled binary allocates up front: 8 per possible
    token value, so 512 KiB for u16 but 32 GiB for u32 (measured here: "memory allocation
    of 34359738368 bytes failed" on a 23 GiB machine)."""
    return 8 << (8 * width)


def check_sort_memory(width: int) -> None:
    need, free = sort_memory(width), _available_memory()
    if need > free:
        raise HarnessError(
            f"a {8 * width}-bit index needs about {need >> 30} GiB of free memory for the bundled suffix-array "
            f"builder; this machine has {free >> 30} GiB free. Build it on a larger machine, or use a tokenizer "
            f"with at most 65,535 ids (a u16 index).")


def build_suffix_array(data_file: Path, table_file: Path, width: int, cpus: int, work_dir: Path) -> dict[str, Any]:
    """Sort the suffixes of `data_file` into `table_file` with the bundled binary."""
    ds_size = data_file.stat().st_size
    ratio = layout.expected_ptr_bytes(ds_size)
    if ds_size < PARALLEL_MIN_BYTES:
        cpus = 1
    else:
        cpus = max(1, min(cpus, ds_size // BYTES_PER_JOB))
    if width == 4:
        cpus = max(1, min(cpus, _available_memory() // sort_memory(width)))
    # Each part is sorted in memory at about 8 bytes per byte of data: split the parts
    # into sequential batches of `cpus` until one batch fits in half the free RAM.
    budget = _available_memory() // 2
    batches = 1
    while batches * (budget // 8) < ds_size:
        batches *= 2
    jobs = batches * cpus
    part = ds_size // jobs
    part += (-part) % width  # parts hold whole tokens
    parts_dir, merged_dir = work_dir / "parts", work_dir / "merged"
    for folder in (parts_dir, merged_dir):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    binary = rust_indexing()
    common = ["--ratio", ratio, "--token-width", width]
    for first in range(0, jobs, cpus):
        procs = []
        for j in range(first, min(first + cpus, jobs)):
            start, end = j * part, min((j + 1) * part + HACK, ds_size)
            if start >= ds_size:
                break
            procs.append(_run([binary, "make-part", "--data-file", data_file, "--parts-dir", parts_dir,
                               "--start-byte", start, "--end-byte", end, *common]))
        _wait(procs, "make-part")
    _wait([_run([binary, "merge", "--data-file", data_file, "--parts-dir", parts_dir, "--merged-dir", merged_dir,
                 "--num-threads", cpus, "--hacksize", HACK, *common])], "merge")
    _wait([_run([binary, "concat", "--data-file", data_file, "--merged-dir", merged_dir, "--merged-file",
                 table_file, "--num-threads", cpus, *common])], "concat")
    shutil.rmtree(parts_dir, ignore_errors=True)
    shutil.rmtree(merged_dir, ignore_errors=True)
    return {"cpus": cpus, "jobs": jobs, "ptr_bytes": ratio}


def read_pointers(table: np.ndarray, ptr_bytes: int, start: int, stop: int) -> np.ndarray:
    """Suffix-array entries [start, stop) of a uint8 table as uint64 byte offsets."""
    raw = np.asarray(table[start * ptr_bytes: stop * ptr_bytes]).reshape(-1, ptr_bytes)
    wide = np.zeros((raw.shape[0], 8), dtype=np.uint8)
    wide[:, :ptr_bytes] = raw
    return wide.view("<u8").ravel()


def verify_table(data_file: Path, table_file: Path, width: int, seed: int = 0) -> None:
    """Check that the table is a sorted permutation of the token positions (sampled on big
    tables). A corrupt table is what makes the engine segfault on its first query."""
    ds_size = data_file.stat().st_size
    tokens = ds_size // width
    ptr_bytes = layout.expected_ptr_bytes(ds_size)
    if table_file.stat().st_size != tokens * ptr_bytes:
        raise DataError(f"{table_file}: {table_file.stat().st_size} bytes, expected {tokens * ptr_bytes}; "
                        f"the suffix array build was incomplete.")
    table = np.memmap(table_file, dtype=np.uint8, mode="r")
    data = np.memmap(data_file, dtype=np.uint8, mode="r")
    if tokens <= _VERIFY_ALL_BELOW:
        ranks = np.arange(tokens - 1)
        ptrs = read_pointers(table, ptr_bytes, 0, tokens)
        if np.any(ptrs % width) or np.any(ptrs >= ds_size) or len(np.unique(ptrs)) != tokens:
            raise DataError(f"{table_file}: not a permutation of the token positions; rebuild with --cpus 1.")
    else:
        ranks = np.random.default_rng(seed).integers(0, tokens - 1, size=_VERIFY_SAMPLES)
        ptrs = None
    for rank in ranks:
        a, b = (read_pointers(table, ptr_bytes, int(rank), int(rank) + 2) if ptrs is None
                else ptrs[rank: rank + 2])
        if a % width or b % width or a >= ds_size or b >= ds_size or bytes(data[a:a + 64]) > bytes(data[b:b + 64]):
            raise DataError(f"{table_file}: suffixes out of order at rank {int(rank)}; rebuild with --cpus 1.")


def _write_data(staging: Path, docs: Iterator, tokenizer, dtype: str, prefix: str) -> dict[str, Any]:
    """Tokenise documents as running text (`prefix` before each) into shard 0; return
    counts and the corpus hash."""
    width = layout.WIDTHS[dtype]
    np_dtype = "<u2" if width == 2 else "<u4"
    max_id = (1 << (8 * width)) - 2
    sep = b"\xff" * width
    corpus = hashlib.sha256()
    counts = {"documents": 0, "tokens": 0}
    with open(staging / "tokenized.0", "wb") as ds, open(staging / "offset.0", "wb") as od, \
            open(staging / "metadata.0", "wb") as mt, open(staging / "metaoff.0", "wb") as mo:
        position = meta_position = 0

        def flush(batch):
            nonlocal position, meta_position
            for doc, ids in zip(batch, encode_documents(tokenizer, [d.text for d in batch], prefix)):
                array = np.asarray(ids, dtype=np.int64)
                if array.size and (array.min() < 0 or array.max() > max_id):
                    raise DataError(f"token id {int(array.max())} does not fit token_dtype {dtype}.")
                blob = sep + array.astype(np_dtype).tobytes()
                od.write(np.uint64(position).tobytes())
                ds.write(blob)
                position += len(blob)
                line = (json.dumps(doc.meta, ensure_ascii=False) + "\n").encode()
                mo.write(np.uint64(meta_position).tobytes())
                mt.write(line)
                meta_position += len(line)
                encoded = doc.text.encode("utf-8")
                corpus.update(len(encoded).to_bytes(8, "little") + encoded)
                counts["documents"] += 1
                counts["tokens"] += len(ids) + 1  # the separator is a token position too

        batch = []
        for doc in docs:
            batch.append(doc)
            if len(batch) == BATCH_DOCS:
                flush(batch)
                batch = []
        if batch:
            flush(batch)
    if counts["documents"] == 0:
        raise DataError("the corpus has no non-empty documents.")
    return {**counts, "sha256": corpus.hexdigest()}


def build_index(out_dir: str | os.PathLike, inputs: list[str], tokenizer, identity: TokenizerIdentity, *,
                force: bool, text_field: str = "text", split_lines: bool = False, cpus: int = 1,
                corpus_kind: str = "files") -> layout.IndexInfo:
    """Build (or reuse) the index of `inputs` in `out_dir`; return it validated. `force`: rebuild an
    existing index (`harness index build --force`); every caller says which."""
    target = Path(os.path.expanduser(str(out_dir))).resolve()
    with locked(target):
        if target.exists() and not force:
            if (target / layout.MANIFEST).is_file():
                info = layout.inspect_index(target)
                if (info.manifest or {}).get("tokenizer", {}).get("fingerprint") != identity.fingerprint:
                    raise HarnessError(f"index {target} exists and was built with another tokenizer; "
                                       f"pass --force to rebuild it or choose another --out.")
                check_format(info.manifest, target, tokenizer)  # a stale format is refused or warned about
                log.info("index %s exists; reusing it (pass --force to rebuild)", target)
                return info
            if any(target.iterdir()):
                raise HarnessError(f"{target} exists and is not a harness index; choose an empty or new --out.")
        staging = target.parent / f".staging-{target.name}-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            manifest = _build_into(staging, inputs, tokenizer, identity, text_field, split_lines, cpus,
                                   corpus_kind)
            if target.exists():
                old = target.parent / f".old-{target.name}-{os.getpid()}"
                os.rename(target, old)
                shutil.rmtree(old, ignore_errors=True)
            os.rename(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        log.info("built index %s: %d documents, %d tokens in %.1f s", target, manifest["documents"],
                 manifest["tokens"], manifest["build"]["seconds"])
        return layout.inspect_index(target)


def _build_into(staging: Path, inputs: list[str], tokenizer, identity: TokenizerIdentity, text_field: str,
                split_lines: bool, cpus: int, corpus_kind: str) -> dict[str, Any]:
    started = time.time()
    dtype = token_dtype_for(identity.vocab_size)
    width = layout.WIDTHS[dtype]
    check_sort_memory(width)  # before spending time on tokenising
    prefix = document_prefix(tokenizer)
    data = _write_data(staging, iter_documents(inputs, text_field, split_lines), tokenizer, dtype, prefix)
    tokenized_at = time.time()
    sa = build_suffix_array(staging / "tokenized.0", staging / "table.0", width, cpus, staging / "work")
    shutil.rmtree(staging / "work", ignore_errors=True)
    verify_table(staging / "tokenized.0", staging / "table.0", width)
    # First contact with the engine in a child process: a crash cannot kill the caller.
    # The count of one token must equal a plain count over the data file.
    tokens = np.memmap(staging / "tokenized.0", dtype="<u2" if width == 2 else "<u4", mode="r")
    sample = int(tokens[1]) if len(tokens) > 1 else 0
    expected = int(np.count_nonzero(tokens == sample))
    del tokens
    got = probe.probe(layout.engine_path(staging), dtype, identity.vocab_size, identity.eos_token_id, [sample])
    if got["count"].get("count") != expected:
        raise DataError(f"the new index counts token {sample} {got['count']} times, a plain count says {expected}; "
                        f"the suffix array is wrong. Rebuild with --cpus 1.")
    shard = {kind: {"name": f"{kind}.0", "bytes": (staging / f"{kind}.0").stat().st_size}
             for kind in ("tokenized", "table", "offset", "metadata", "metaoff")}
    shard["tokenized"]["sha256"] = sha256_file(staging / "tokenized.0")
    shard["table"]["ptr_bytes"] = sa["ptr_bytes"]
    manifest: dict[str, Any] = {
        "schema": layout.MANIFEST_SCHEMA,
        "format_version": FORMAT_VERSION,
        "engine": "infini-gram 2.6.0",
        "index_version": 4,
        "token_dtype": dtype,
        "token_width": width,
        "tokenizer": identity.to_dict(),
        "document_prefix": prefix,  # what each document was tokenised after (formats.py)
        "corpus": {"kind": corpus_kind, "inputs": describe_inputs(inputs), "text_field": text_field,
                   "split_lines": split_lines, "sha256": data["sha256"]},
        "documents": data["documents"],
        "tokens": data["tokens"],
        "shards": [shard],
    }
    manifest["hash"] = layout.content_hash(manifest)
    manifest["build"] = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(time.time() - started, 2),
        "tokenize_seconds": round(tokenized_at - started, 2),
        "cpus": sa["cpus"], "sa_jobs": sa["jobs"], "host": platform.node(),
        "verified": True,
    }
    (staging / layout.MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False))
    return manifest


def demo_index_dir(identity: TokenizerIdentity) -> Path:
    """Where the demo index for a tokenizer lives under the harness cache."""
    from ..models import cache_dir
    from .sources import demo_corpus_path

    source = demo_corpus_path()
    stamp = json.dumps([FORMAT_VERSION, identity.fingerprint, source.stat().st_size, sha256_file(source)])
    name = "".join(c if c.isalnum() or c in "-_." else "-" for c in identity.spec.split("/")[-1])
    return cache_dir() / "indexes" / f"demo-{name}-{hashlib.sha256(stamp.encode()).hexdigest()[:10]}"


def ensure_demo_index(tokenizer, identity: TokenizerIdentity, cpus: int = 1) -> layout.IndexInfo:
    """The demo index (10k Wikipedia lead sections) for this tokenizer, built on first use."""
    from .sources import demo_corpus_path

    target = demo_index_dir(identity)
    if (target / layout.MANIFEST).is_file():
        info = layout.inspect_index(target)
        if (info.manifest or {}).get("format_version") == FORMAT_VERSION:
            return info
        # The directory name carries the format, so only a copied or hand-edited cache gets
        # here; the demo index is ours to rebuild, never worth an error.
        log.info("the demo index in %s has format %s; rebuilding it in format %s", target,
                 (info.manifest or {}).get("format_version"), FORMAT_VERSION)
        return build_index(target, [str(demo_corpus_path())], tokenizer, identity, cpus=cpus, force=True,
                           corpus_kind="demo")
    log.info("building the demo index in %s (once; a few seconds)", target)
    return build_index(target, [str(demo_corpus_path())], tokenizer, identity, cpus=cpus, corpus_kind="demo",
                       force=False)

