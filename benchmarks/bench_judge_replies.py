"""Parse failures of text vs structured (JSON schema) judge replies, and what each judge costs.

    python benchmarks/bench_judge_replies.py [--items 12] [--skip-embedded]

1. judge=embedded: `transformers serve` on the embedded SmolLM2-135M (CPU, offline). The
   preflight probes structured-reply support (reply_mode auto); `transformers serve` takes no
   JSON schema, so the run reports "unsupported" and grades in text: items, parse failures,
   failed items, seconds per item. reply_mode=json_schema is then tried and must be refused.
2. The scripted schema server (tests/judge/judge_server.py, 127.0.0.1) with a sloppy-judge
   profile: 30% of replies are prose (60 distinct items). Text mode (re-asks off) loses those items to the parser;
   json_schema mode gets schema-conforming JSON for every one (what constrained decoding does).
3. judge=reference: 2,000 grade items in-process.

Each part prints one line per mode. Runs in a few minutes on 2 CPU cores (part 1 dominates:
server start ~20 s, then about a second per reply). Nothing here asserts.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root: tests/judge/judge_server.py

from factrl.harness.core.errors import ConfigError  # noqa: E402
from factrl.harness.services.judge import ATOMIC_FACTS, SIMPLEQA_GRADE, open_judge  # noqa: E402

QUESTIONS = [("What is the capital of France?", "Paris", ["Paris", "It is Lyon.", "I don't know"]),
             ("Who wrote Hamlet?", "William Shakespeare", ["Shakespeare", "Christopher Marlowe", "Not sure"]),
             ("In which year did Apollo 11 land on the Moon?", "1969", ["1969", "1972", "In July 1969"]),
             ("What is the chemical symbol of gold?", "Au", ["Au", "Ag", "It is Au, from aurum"])]
TEXTS = ["Marie Curie was born in Warsaw. She won two Nobel Prizes.",
         "The Eiffel Tower is in Paris. It was finished in 1889."]


def grade_items(n: int) -> list[dict]:
    flat = [{"question": q, "gold": g, "answer": a} for q, g, answers in QUESTIONS for a in answers]
    items = []
    for i in range(n):
        item = dict(flat[i % len(flat)])
        if i >= len(flat):
            item["answer"] += f" ({i})"  # distinct items: nothing is shared or cached
        items.append(item)
    return items


def _ask(label: str, judge, prompt, items: list[dict]) -> str:
    """Ask one batch; the line reports this batch's own counts (the judge's counters are cumulative)."""
    before = judge.stats()
    started = time.perf_counter()
    results = judge.ask_many(prompt, items)
    seconds = time.perf_counter() - started
    parse_failures = judge.stats()["parse_failures"] - before["parse_failures"]
    failed = sum(not r.ok for r in results)
    return (f"{label:<40} items {len(results):>4}  parse failures {int(parse_failures):>4}  "
            f"failed {failed:>4}  {seconds / max(1, len(results)):.5f} s/item")


def embedded(items: list[dict], cache: Path) -> list[str]:
    lines = []
    cfg = {"backend": "embedded", "model": "smollm2-135m", "cache": str(cache / "embedded.sqlite3"),
           "max_reasks": 0, "reply_mode": "auto"}
    started = time.perf_counter()
    with open_judge(cfg) as judge:
        ready = time.perf_counter() - started
        entry = judge.describe()
        lines.append(f"embedded SmolLM2-135M: started and probed in {ready:.1f}s; structured replies "
                     f"{'supported' if entry['structured_supported'] else 'UNSUPPORTED (asks in text)'}")
        for prompt, batch in ((SIMPLEQA_GRADE, items), (ATOMIC_FACTS, [{"text": t} for t in TEXTS])):
            lines.append(_ask(f"embedded {prompt.name} (auto -> text)", judge, prompt, batch))
    try:
        with open_judge({**cfg, "reply_mode": "json_schema"}):
            lines.append("embedded reply_mode=json_schema: accepted (unexpected)")
    except ConfigError as err:
        lines.append(f"embedded reply_mode=json_schema: refused at the preflight ({str(err)[:90]}...)")
    return lines


def scripted(items: list[dict]) -> list[str]:
    from tests.judge.judge_server import JudgeServer

    lines = []
    for mode in ("text", "json_schema"):
        with JudgeServer(fault_rate=0.3, fault_kinds=("garbage",), seed=1, structured="follow") as server:
            cfg = {"backend": "openai", "base_url": server.url, "model": "judge-model", "api_key_env": None,
                   "cache": None, "max_reasks": 0, "max_failed_share": 1.0, "reply_mode": mode}
            with open_judge(cfg) as judge:
                lines.append(_ask(f"scripted server, reply_mode={mode}", judge, SIMPLEQA_GRADE, items))
    return lines


def reference(items: list[dict]) -> list[str]:
    with open_judge({"backend": "reference"}) as judge:
        return [_ask("reference (in-process)", judge, SIMPLEQA_GRADE, items)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=12, help="grade items per judge")
    parser.add_argument("--skip-embedded", action="store_true", help="leave out the transformers serve part")
    args = parser.parse_args()
    items = grade_items(args.items)
    with tempfile.TemporaryDirectory() as scratch:
        lines = [] if args.skip_embedded else embedded(items, Path(scratch))
    lines += scripted(grade_items(max(60, args.items))) + reference(grade_items(2000))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
