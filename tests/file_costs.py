"""The order `make test` hands test files to its workers: the longest first.

pytest-xdist's `--dist loadfile` gives each worker one file at a time, in the order of its queue;
by default it queues files by their number of tests, so the files of a few long end-to-end tests
(training runs killed and resumed, multi-process runs) come last and one worker finishes them
alone. With `--no-loadscope-reorder` (the Makefile passes it) the queue follows the collection
order, which `tests/conftest.py` sorts here: the longest file first, a file's own tests in their
order (longest-processing-time-first scheduling).

A file's cost is its seconds in `file_costs.json` (measured), or, for a file not measured yet,
20 s for each test marked `slow` plus 0.3 s for each other. Regenerate the table after a run
with durations (a stale table only changes the order, never what runs):

    make test PYTEST_ARGS="--durations=0" | tee /tmp/durations.log
    python -m tests.file_costs /tmp/durations.log
"""
from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

TABLE = Path(__file__).with_name("file_costs.json")
_LINE = re.compile(r"\s*([\d.]+)s (?:call|setup|teardown)\s+([^:\s]+)::")


def _table() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(TABLE.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def ordered(items: list) -> list:
    """`items` (pytest items) regrouped by file, the costliest file first; stable otherwise."""
    table = _table()
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def cost(path: str) -> float:
        if path in table:
            return table[path]
        return sum(20.0 if item.get_closest_marker("slow") else 0.3 for item in files[path])

    order = sorted(files, key=lambda path: -cost(path))  # sorted() is stable: ties keep collection order
    return [item for path in order for item in files[path]]


def costs_from_log(text: str) -> dict[str, float]:
    """Seconds per test file from pytest's `--durations` lines (setup, call and teardown)."""
    seconds: Counter = Counter()
    for line in text.splitlines():
        match = _LINE.match(line)
        if match:
            seconds[match.group(2)] += float(match.group(1))
    return {path: round(value, 1) for path, value in seconds.most_common() if value >= 1.0}


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        sys.exit("usage: python -m tests.file_costs DURATIONS_LOG  (the output of pytest --durations=0)")
    costs = costs_from_log(Path(argv[0]).read_text())
    if not costs:
        sys.exit(f"{argv[0]}: no '--durations' lines found; run pytest with --durations=0")
    TABLE.write_text(json.dumps(costs, indent=1) + "\n")
    print(f"{TABLE}: {len(costs)} files, {sum(costs.values()):.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
