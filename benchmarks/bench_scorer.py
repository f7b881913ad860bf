"""Scorer benchmark: the default scorer against a naive matcher, at the paper's scale.

    python benchmarks/bench_scorer.py [--shared DIR] [--repeats 5] [--out benchmarks/out]

Builds a predictions file of 40,964 closed-book completions (the shared NQ-Open, PopQA and
SimpleQA questions repeated to that count) with a realistic mix: short right answers, right
answers inside long sentences, wrong answers, refusals with and without a period, truncated
answer blocks, missing tags, accented and curly-quoted text. Then, in one process:

1. the default scorer (extraction, token-boundary bidirectional matching, refusal/empty
   detection, every diagnostic and the metric aggregation; references normalised inside the
   timed region) on the in-memory completions;
2. a naive reference matcher on the same completions: regex extraction, normalise both sides
   with regular expressions, test substrings in both directions;
3. the TruthfulQA ROUGE-1 rule on the 817 shared questions (one reused scorer);
4. end to end: read the JSONL file, score, write samples.jsonl and metrics.json.

Times are the best of `--repeats` interleaved runs with the garbage collector paused. The target is a ratio >= 1.0 (default scorer at least
as fast as the naive matcher) and the TruthfulQA rule under half a second.
"""
from __future__ import annotations

import argparse
import gc
import json
import random
import re
import sys
import time
from pathlib import Path

from factrl.evals.metrics import aggregate
from factrl.evals.predictions import align, read_predictions, write_jsonl
from factrl.evals.scorers import get_scorer
from factrl.evals.sets import EvalSet, load_set
from factrl.evals.loaders import Record

PAPER_SCALE = 40_964
ROOT = Path(__file__).resolve().parents[1]


def best_of(repeats: int, *funcs):
    """[(best wall time in seconds, last result)] per function.

    The functions run interleaved (a, b, a, b, ...) so that a noisy neighbour slows both alike,
    with the garbage collector paused as `timeit` does.
    """
    best = [float("inf")] * len(funcs)
    results: list = [None] * len(funcs)
    for _ in range(repeats):
        for i, func in enumerate(funcs):
            gc.collect()
            gc.disable()
            try:
                start = time.perf_counter()
                results[i] = func()
                best[i] = min(best[i], time.perf_counter() - start)
            finally:
                gc.enable()
    return list(zip(best, results))


# --------------------------------------------------------------------------------------------
# Realistic completions
# --------------------------------------------------------------------------------------------
THINK = ("<think>The question asks about a specific fact. I recall the relevant article and "
         "the most likely candidate; I am fairly confident.</think>")
REFUSALS = ("I don't know", "I don't know.", "I do not know", "I have no comment.", "I don’t know")
FILLER = ("This is a long explanation that goes on about the history of the subject, the people "
          "involved, several dates and places, and the reasons why the question is hard to answer "
          "with certainty, without ever naming a definite answer to it.")


def completion_for(record: Record, other: Record, rng: random.Random) -> str:
    ref = rng.choice(record.references)
    roll = rng.random()
    if roll < 0.35:
        return f"{THINK}<answer>{ref}</answer>"
    if roll < 0.50:
        return f"{THINK}<answer>I believe the answer is most likely {ref}, based on what I remember.</answer>"
    if roll < 0.68:
        return f"{THINK}<answer>{other.references[0]}</answer>"
    if roll < 0.78:
        return f"<think>I am not sure about this one.</think><answer>{rng.choice(REFUSALS)}</answer>"
    if roll < 0.86:
        return f"{THINK}<answer>{FILLER}</answer>"
    if roll < 0.91:
        return f"{THINK}<answer>{ref} and also"  # truncated: no closing tag
    if roll < 0.94:
        return f"{THINK} The answer is {ref}."  # no answer block
    if roll < 0.97:
        return f"<think>Ç’est la réponse « probable ».</think><answer>{ref} (Zürich’s)</answer>"
    return ""


def build_closed_book(shared: Path) -> tuple[EvalSet, list[str]]:
    sets = [load_set(name, data_dir=shared) for name in ("nq_open", "popqa", "simpleqa")]
    pool = [r for s in sets for r in s.records]
    rng = random.Random(0)
    records, completions = [], []
    for i in range(PAPER_SCALE):
        base = pool[i % len(pool)]
        records.append(Record(f"{i}", base.question, base.references))
        completions.append(completion_for(base, pool[rng.randrange(len(pool))], rng))
    return EvalSet("bench", "closed_book", records, "benchmark", None, "1"), completions


def truthfulqa_completions(eval_set: EvalSet) -> list[str]:
    rng = random.Random(1)
    out = []
    for r in eval_set.records:
        roll = rng.random()
        if roll < 0.35:
            answer = r.references[0]
        elif roll < 0.65:
            answer = rng.choice(r.incorrect)
        elif roll < 0.75:
            answer = rng.choice(REFUSALS)
        elif roll < 0.9:
            answer = f"{rng.choice(r.references)}. {FILLER}"
        else:
            answer = "No"
        out.append(f"{THINK}<answer>{answer}</answer>")
    return out


# --------------------------------------------------------------------------------------------
# The naive reference matcher (what released scripts do), measured in the same run
# --------------------------------------------------------------------------------------------
_NAIVE_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.DOTALL)
_NAIVE_PUNCT = re.compile(r"[^\w\s]")
_NAIVE_ARTICLES = re.compile(r"\b(a|an|the)\b")
_NAIVE_SPACES = re.compile(r"\s+")


def naive_normalize(text: str) -> str:
    text = _NAIVE_ARTICLES.sub(" ", _NAIVE_PUNCT.sub(" ", text.lower()))
    return _NAIVE_SPACES.sub(" ", text).strip()


def naive_score(eval_set: EvalSet, completions: list[str]) -> float:
    correct = 0
    for record, completion in zip(eval_set.records, completions):
        match = _NAIVE_ANSWER.search(completion)
        pred = naive_normalize(match.group(1)) if match else ""
        if not pred:
            continue
        for ref in record.references:
            gold = naive_normalize(ref)
            if gold and (gold in pred or pred in gold):
                correct += 1
                break
    return correct / len(completions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=ROOT / ".." / "shared" / "data" / "benchmarks",
                        help="folder with the shared benchmark files (default: ../shared/data/benchmarks)")
    parser.add_argument("--repeats", type=int, default=7, help="timed repetitions; the best is reported")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out", help="where files are written")
    args = parser.parse_args(argv)
    if not (args.shared / "nq_open_validation.json").is_file():
        print(f"bench_scorer: the shared benchmark files are not in {args.shared}; pass --shared DIR.",
              file=sys.stderr)
        return 2

    bench_set, completions = build_closed_book(args.shared)
    scorer = get_scorer("default")
    metrics = scorer.metrics("closed_book")

    def run_default():
        fresh = EvalSet(bench_set.name, bench_set.task, bench_set.records, "benchmark", None, "1")
        samples = scorer.score(fresh, completions)  # references are prepared inside the timing
        return aggregate(samples, metrics)

    (t_default, result), (t_naive, naive_acc) = best_of(args.repeats, run_default,
                                                        lambda: naive_score(bench_set, completions))
    n = len(completions)
    print(f"closed-book predictions: {n:,}")
    print(f"  default scorer : {t_default * 1000:7.1f} ms  {n / t_default:>10,.0f} predictions/s  "
          f"accuracy {result['accuracy']['value']:.4f}  one-way {result['accuracy_one_way']['value']:.4f}  "
          f"na {result['na_rate']['value']:.4f}")
    print(f"  naive matcher  : {t_naive * 1000:7.1f} ms  {n / t_naive:>10,.0f} predictions/s  "
          f"accuracy {naive_acc:.4f} (character substrings)")
    print(f"  ratio (default speed / naive speed): {t_naive / t_default:.2f}  (target >= 1.0)")

    compat = get_scorer("corver-official")
    [(t_compat, _)] = best_of(max(1, args.repeats // 2), lambda: compat.score(bench_set, completions))
    print(f"  corver-official: {t_compat * 1000:7.1f} ms  {n / t_compat:>10,.0f} predictions/s (for reference)")

    tqa = load_set("truthfulqa", data_dir=args.shared)
    tqa_completions = truthfulqa_completions(tqa)
    [(t_tqa, tqa_result)] = best_of(args.repeats, lambda: aggregate(scorer.score(tqa, tqa_completions),
                                                                    scorer.metrics("truthfulqa")))
    print(f"truthfulqa decisions: {tqa.count}  {t_tqa * 1000:.1f} ms  accuracy {tqa_result['accuracy']['value']:.4f} "
          f"(target < 500 ms)")

    # End to end on the file: read, align, score, write samples and metrics.
    args.out.mkdir(parents=True, exist_ok=True)
    pred_file = args.out / "bench_predictions.jsonl"
    write_jsonl(pred_file, ({"id": r.id, "question": r.question, "completion": c}
                            for r, c in zip(bench_set.records, completions)))

    def end_to_end():
        rows = read_predictions(pred_file)
        fresh = EvalSet(bench_set.name, bench_set.task, bench_set.records, "benchmark", None, "1")
        samples = scorer.score(fresh, align(fresh, rows, str(pred_file)))
        write_jsonl(args.out / "bench_samples.jsonl", samples.rows())
        (args.out / "bench_metrics.json").write_text(json.dumps(aggregate(samples, metrics), indent=2))

    [(t_file, _)] = best_of(max(1, args.repeats // 2), end_to_end)
    print(f"end to end (read {pred_file.stat().st_size / 1e6:.1f} MB JSONL, score, write samples+metrics): "
          f"{t_file:.2f} s")
    ok = t_naive / t_default >= 1.0 and t_tqa < 0.5
    print("PASS" if ok else "FAIL: below target")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
