"""Per-run judge accounting (`<run_dir>/judge_stats.json`) and the failed-share stop rule.

Counters (totals and per prompt):
- items: items asked for (cache hits and in-batch duplicates included)
- calls: HTTP requests sent (every attempt: first tries, SDK retries, re-asks)
- retries: transport retries (timeouts, connection errors, 429, 5xx, malformed bodies)
- reasks: new requests after a reply the prompt's parser could not read
- failures: items that ended with no value (no reward signal; never cached)
- parse_failures: replies the parser rejected (re-asked or not)
- cache_hits, deduplicated: items answered from the cache / by an identical item of the batch
- input_tokens, output_tokens: the server's `usage` (when it reports one)
- thinking_stripped: replies read after removing a leaked thinking block (thinking.py)
- wait_s: wall seconds the caller waited on `ask_many`; it runs inside the reward callable,
  so the timer charges the same seconds to its `reward` phase.

A resumed run adds to the file it finds (`attempts` counts the openings), as the timer does.
The file is rewritten (atomically) as requests complete, at most every `WRITE_EVERY_S`, so a
killed attempt's calls are in it too: at most that interval's and the requests in flight are lost.
"""
from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path
from typing import Any, Sequence

from ...core.errors import HarnessError
from ...core.rundir import read_json, write_json

SCHEMA = "factrl.judge.stats/1"
FILENAME = "judge_stats.json"
WRITE_EVERY_S = 0.25
COUNTERS = ("items", "calls", "retries", "reasks", "failures", "parse_failures", "cache_hits", "deduplicated",
            "input_tokens", "output_tokens", "thinking_stripped")


def _empty() -> dict[str, float]:
    return {**dict.fromkeys(COUNTERS, 0), "wait_s": 0.0}


class JudgeStats:
    def __init__(self) -> None:
        self.totals = _empty()
        self.by_prompt: dict[str, dict[str, float]] = {}
        self.attempts = 1
        self._base: dict[str, Any] | None = None
        self._lock = threading.Lock()  # counted on the judge's loop thread, written from the caller's too

    def add(self, prompt: str, **counts: float) -> None:
        with self._lock:
            own = self.by_prompt.setdefault(prompt, _empty())
            for name, value in counts.items():
                self.totals[name] += value
                own[name] += value

    def resume_from(self, path: Path) -> None:
        """Start from an earlier attempt's file (a run resumed in the same directory)."""
        try:
            earlier = read_json(path)
        except (OSError, ValueError):
            return
        if earlier.get("schema") == SCHEMA:
            self._base = earlier
            self.attempts = int(earlier.get("attempts", 1)) + 1

    def snapshot(self) -> dict[str, Any]:
        """This attempt's counters plus the earlier attempts' (what the file holds)."""
        with self._lock:
            totals, by_prompt = dict(self.totals), {k: dict(v) for k, v in self.by_prompt.items()}
        if self._base:
            for name, value in (self._base.get("totals") or {}).items():
                totals[name] = totals.get(name, 0) + value
            for prompt, counts in (self._base.get("by_prompt") or {}).items():
                own = by_prompt.setdefault(prompt, _empty())
                for name, value in counts.items():
                    own[name] = own.get(name, 0) + value
        totals["wait_s"] = round(totals["wait_s"], 3)
        return {"totals": totals, "by_prompt": by_prompt}

    def write(self, path: Path, judge: dict[str, Any]) -> None:
        write_json(path, {"schema": SCHEMA, "judge": judge, "attempts": self.attempts, **self.snapshot(),
                          "updated": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})


class JudgeFailuresExceeded(HarnessError):
    """More than `judge.max_failed_share` of a step's judge items failed: the run stops (resumably)."""


def failed_count(results: Sequence[Any]) -> int:
    """How many results carry no value (the `rewards/<method>/judge_failed` diagnostic)."""
    return sum(1 for r in results if not r.ok)


def check_failed_share(results: Sequence[Any], max_failed_share: float, *, where: str = "this step",
                       stats_file: Path | None = None) -> int:
    """The failed count, or JudgeFailuresExceeded when failures exceed `max_failed_share` of the items.

    Methods call it once per reward batch, after logging the count: a few failures cost signal
    for those items only; a judge that is down stops the run with the counts, and a rerun
    resumes from the last checkpoint (nothing failed was cached).
    """
    failed = failed_count(results)
    if results and failed / len(results) > float(max_failed_share):
        first = next(r.error for r in results if not r.ok)
        seen = f" (counts in {stats_file})" if stats_file else ""
        raise JudgeFailuresExceeded(
            f"judge: {failed} of {len(results)} items failed in {where} ({failed / len(results):.0%} > "
            f"judge.max_failed_share={float(max_failed_share):g}; first: {first}){seen}; fix the judge server "
            f"and rerun to resume, or raise judge.max_failed_share.")
    return failed
