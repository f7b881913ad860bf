"""Generation across sets: resume from per-sample JSONL, reuse cached responses, write as finished.

Every set has `<out>/<set>/generations.jsonl` (one line per finished sample: id, question,
completion, finish_reason, n_tokens, cached) and `<out>/<set>/generation.json` (what produced
it). A restart reads the JSONL (dropping a half-written last line), skips the ids it holds and
asks the backend only for the rest; requests of all sets go to the backend in one call so a
batching engine sees the whole workload. The backend is built only if something is missing.
"""
from __future__ import annotations

import logging
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tqdm import tqdm

from factrl.harness.core.errors import DataError
from factrl.harness.core.rundir import read_json, write_json

from .backends.base import Backend, Generation, Request
from .cache import ResponseCache
from .predictions import JsonlAppender, clean_text, iter_jsonl
from .sets import EvalSet

log = logging.getLogger("factrl.evals")

GENERATIONS = "generations.jsonl"
DESCRIPTOR = "generation.json"


@dataclass
class SetJob:
    eval_set: EvalSet
    folder: Path

    @property
    def path(self) -> Path:
        return self.folder / GENERATIONS


def read_generations(path: Path) -> dict[str, dict]:
    """id -> generation row of an existing generations.jsonl (a torn last line is dropped)."""
    if not path.is_file():
        return {}
    return {str(row["id"]): row for _, row in iter_jsonl(path, repair_tail=True)
            if "id" in row and isinstance(row.get("completion"), str)}


class _AboveBar:
    """A console stream whose lines tqdm prints above its bar instead of through it."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        tqdm.write(text, file=self.stream, end="")

    def flush(self) -> None:
        self.stream.flush()


@contextmanager
def _log_above_bar(bar):
    """Route the factrl console handlers through tqdm.write while `bar` shows; their levels,
    formats and the run.log file handler stay as they are."""
    if bar.disable:
        yield
        return
    swapped = [(h, h.stream) for h in logging.getLogger("factrl").handlers
               if type(h) is logging.StreamHandler and h.stream in (sys.stdout, sys.stderr)]
    for handler, stream in swapped:
        handler.setStream(_AboveBar(stream))
    try:
        yield
    finally:
        for handler, stream in swapped:
            handler.setStream(stream)


def _check_descriptor(folder: Path, descriptor: dict, compare: Callable[[dict], dict]) -> None:
    """Refuse to extend generations that a different model, prompt or decoding produced."""
    file = folder / DESCRIPTOR
    if file.is_file():
        previous, current = compare(read_json(file)), compare(descriptor)
        changed = sorted(k for k in current if previous.get(k) != current[k])
        if changed and (folder / GENERATIONS).is_file():
            raise DataError(f"{folder / GENERATIONS} was generated with different {', '.join(changed)}; "
                            f"use another output directory or delete the file to start over.")
    write_json(file, descriptor)


@dataclass(frozen=True)
class Shard:
    """One of `count` data-parallel generation processes: it generates the records whose index in
    their set is `index` mod `count`, into its own folders, skipping what the evaluation's own
    folder (`done_dir`/<set>/generations.jsonl) already holds (harness/engine/run/eval_process.py merges)."""

    index: int
    count: int
    done_dir: Path

    def mine(self, position: int) -> bool:
        return position % self.count == self.index


def generate_sets(jobs: list[SetJob], *, system: str, descriptor: dict,
                  make_backend: Callable[[], Backend], cache: ResponseCache | None = None,
                  compare: Callable[[dict], dict] = dict, progress_every: float = 30.0,
                  shard: Shard | None = None) -> dict[str, dict]:
    """Complete every set's generations.jsonl; returns per-set counts {resumed, cached, generated}.

    descriptor: written to each set's generation.json; `compare(descriptor)` is what must be
    equal for existing generations to be extended (paths may differ between machines).
    shard: generate only this process's slice (Shard).
    """
    stats: dict[str, dict] = {}
    pending: list[tuple[SetJob, int]] = []  # (job, record index)
    writers: dict[str, JsonlAppender] = {}
    try:
        for job in jobs:
            job.folder.mkdir(parents=True, exist_ok=True)
            _check_descriptor(job.folder, descriptor, compare)
            done = read_generations(job.path)
            if shard is not None:
                done = {**read_generations(Path(shard.done_dir) / job.eval_set.name / GENERATIONS), **done}
            todo = [i for i, r in enumerate(job.eval_set.records)
                    if r.id not in done and (shard is None or shard.mine(i))]
            mine = job.eval_set.count if shard is None else sum(map(shard.mine, range(job.eval_set.count)))
            stats[job.eval_set.name] = {"resumed": mine - len(todo), "cached": 0, "generated": 0}
            writers[job.eval_set.name] = JsonlAppender(job.path)
            pending += [(job, i) for i in todo]

        def write(job: SetJob, index: int, gen: Generation, cached: bool) -> None:
            record = job.eval_set.records[index]
            writers[job.eval_set.name].write({"id": record.id, "question": record.question,
                                              "completion": clean_text(gen.text), "finish_reason": gen.finish_reason,
                                              "n_tokens": gen.n_tokens, "cached": cached})

        keys: list[str | None] = [None] * len(pending)
        if cache is not None:
            missing = []
            for k, (job, index) in enumerate(pending):
                keys[k] = cache.key(system, job.eval_set.records[index].question)
                hit = cache.get(keys[k])
                if hit is None:
                    missing.append(k)
                else:
                    write(job, index, hit, True)
                    stats[job.eval_set.name]["cached"] += 1
            order = missing
        else:
            order = list(range(len(pending)))
        if not order:  # nothing to generate: say where the answers came from (a silent 0.2 s run puzzles)
            cached = sum(s["cached"] for s in stats.values())
            log.info("nothing to generate: %s%s", "; ".join(
                f"{name}: {s['cached']} answers from the response cache, {s['resumed']} resumed"
                for name, s in stats.items()), " (eval.cache=false generates them anew)" if cached else "")
            return stats
        log.info("generating %d completions (%s)", len(order),
                 ", ".join(f"{name}: {s['resumed']} resumed, {s['cached']} cached" for name, s in stats.items()))
        backend = make_backend()
        requests = [Request(pending[k][0].eval_set.records[pending[k][1]].question, system) for k in order]
        started = last = time.monotonic()
        # The bar (rate, ETA) is for the console, as in training; run.log gets a line every
        # `progress_every` seconds (DEBUG) and the total (INFO). Log lines (retries) print above it.
        label = getattr(backend, "name", "") or "backend"
        bar = tqdm(total=len(requests), desc=f"generating ({label})", unit="answer", dynamic_ncols=True)
        try:
            with _log_above_bar(bar):
                for n, (i, gen) in enumerate(backend.generate(requests), 1):
                    job, index = pending[order[i]]
                    write(job, index, gen, False)
                    stats[job.eval_set.name]["generated"] += 1
                    if cache is not None:
                        cache.put(keys[order[i]], gen)
                    bar.update()
                    if time.monotonic() - last >= progress_every and n < len(requests):
                        last = time.monotonic()
                        log.debug("generated %d/%d (%.2f/s)", n, len(requests), n / max(last - started, 1e-9))
        finally:
            bar.close()
            backend.close()
        elapsed = time.monotonic() - started
        log.info("generated %d/%d (%.2f/s)", len(requests), len(requests), len(requests) / max(elapsed, 1e-9))
        return stats
    finally:
        for writer in writers.values():
            writer.close()
