"""Constant answers on the shared files: the numbers behind evals/README.md's "Hard to game".

    python benchmarks/constant_answers.py [--shared DIR]

Every question of a set gets the same completion, `<answer>X</answer>` (closed) or
`<answer>X` (truncated), and the script prints the accuracy in % for the default scorer and
for corver-official, then the TruthfulQA sentences that the ROUGE rule itself lets score (the
default scorer, closed form) and the bare ROUGE rule without the content guard. A few seconds.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from factrl.evals.gaming_panel import CONSTANTS, SENTENCES  # the one versioned panel (leaderboard floors too)
from factrl.evals.metrics import aggregate
from factrl.evals.scorers import get_scorer
from factrl.evals.sets import load_set

ROOT = Path(__file__).resolve().parents[1]
SETS = ("nq_open", "popqa", "simpleqa", "truthfulqa")
UNGUARDED = ("No", "the", "a", "I have no comment")


def accuracy(scorer, eval_set, completion: str) -> float:
    samples = scorer.score(eval_set, [completion] * eval_set.count)
    return 100 * aggregate(samples, scorer.metrics(eval_set.task))["accuracy"]["value"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data" / "benchmarks")
    args = parser.parse_args()
    sets = {name: load_set(name, data_dir=args.shared) for name in SETS}
    default, compat = get_scorer("default"), get_scorer("corver-official")
    print("| constant | form | " + " | ".join(SETS) + " |")
    for constant in CONSTANTS:
        for form, completion in (("closed", f"<answer>{constant}</answer>"), ("truncated", f"<answer>{constant}")):
            cells = [f"{accuracy(default, s, completion):.1f} / {accuracy(compat, s, completion):.1f}"
                     for s in sets.values()]
            print(f"| `{constant}` | {form} | " + " | ".join(cells) + " |")
    truthfulqa = sets["truthfulqa"]
    print("\nTruthfulQA, default scorer, closed form:")
    for sentence in SENTENCES:
        print(f"  {sentence!r}: {accuracy(default, truthfulqa, f'<answer>{sentence}</answer>'):.1f}%")
    bare = get_scorer("default", truthfulqa_content_guard=False, truthfulqa_no_comment=False)
    print("TruthfulQA, bare ROUGE rule (no content guard; refusals still 0 unless lm-eval's variant):")
    for constant in UNGUARDED:
        print(f"  {constant!r}: {accuracy(bare, truthfulqa, f'<answer>{constant}</answer>'):.1f}%")


if __name__ == "__main__":
    main()
