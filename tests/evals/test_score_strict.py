"""`harness score` writes strict accuracy (evals/strict.py) beside the scorer's accuracy: in the
set's metrics.json as `strict_accuracy` with each withdrawal reason's count, and in its printed
line; the scorer's own numbers do not move."""
from __future__ import annotations

import json

from factrl.evals.cli import score_main
from factrl.evals.sets import load_set
from factrl.harness.core.answers import STRICT_VERSION


def test_score_reports_strict_accuracy_with_the_reasons(tmp_path, capsys):
    records = load_set("demo", limit=8).records
    gold = [r.references[0] for r in records]
    other = gold[1:] + gold[:1]
    answers = [gold[0],                                   # correct
               f"The answer is {gold[1]}.",               # correct
               f"{other[2]} or {gold[2]}",                # candidates
               f"It is not {gold[3]}",                    # negated
               f"Others say {gold[4]}, but I say {other[4]}.",  # candidates (named and rejected)
               f"{gold[5]} Memorial Stadium",             # embedded
               "Atlantis",                                # wrong: the scorer does not credit it either
               "I don't know"]
    preds = tmp_path / "demo" / "generations.jsonl"
    preds.parent.mkdir()
    preds.write_text("".join(json.dumps({"id": r.id, "completion": f"<think>r</think><answer>{a}</answer>"}) + "\n"
                             for r, a in zip(records, answers)), encoding="utf-8")
    assert score_main([str(preds), "--limit", "8"]) == 0
    doc = json.loads((tmp_path / "demo" / "metrics.json").read_text(encoding="utf-8"))
    assert doc["metrics"]["accuracy"]["value"] == 6 / 8  # the protocol credits every gold it contains
    assert "strict_accuracy" not in doc["metrics"]  # beside the scorer's metrics, never one of them
    assert doc["strict_accuracy"] == {"value": 2 / 8, "n": 8, "rule": STRICT_VERSION,
                                      "withdrawn": {"candidates": 2, "embedded": 1, "negated": 1}}
    printed = capsys.readouterr().out
    assert "accuracy 0.7500" in printed
    assert f"strict 0.2500 (v{STRICT_VERSION}; withdrawn: 2 candidates, 1 embedded, 1 negated)" in printed
    samples = [json.loads(line) for line in (tmp_path / "demo" / "samples.jsonl").read_text().splitlines()]
    assert [s["correct"] for s in samples] == [True] * 6 + [False] * 2
