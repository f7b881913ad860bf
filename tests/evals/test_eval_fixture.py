"""`harness score` on the shared files reproduces hand-checked verdicts on tricky cases.

fixtures/tricky_cases.jsonl lists (set, id, completion) with the expected verdict and a note
saying why. Several cases share a record, so each set is scored in rounds: round r gives the
r-th case of every record its completion and every other question a filler answer that
matches nothing, so the set's accuracy must equal the round's expected correct count / N.
"""
from __future__ import annotations

import json
from collections import defaultdict

import pytest

from factrl.evals.cli import score_main
from factrl.evals.sets import load_set

FILLER = "<think>-</think><answer>qqxqz</answer>"


def _cases(fixtures):
    cases = [json.loads(line) for line in (fixtures / "tricky_cases.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip()]
    rounds: dict[tuple[str, int], dict[str, dict]] = defaultdict(dict)
    seen: dict[tuple[str, str], int] = defaultdict(int)
    for case in cases:
        key = (case["set"], case["id"])
        rounds[(case["set"], seen[key])][case["id"]] = case
        seen[key] += 1
    return rounds


@pytest.mark.parametrize("set_name", ["nq_open", "simpleqa", "popqa", "truthfulqa"])
def test_tricky_cases(set_name, shared, fixtures, tmp_path, capsys):
    eval_set = load_set(set_name, data_dir=shared)
    rounds = {r: c for (s, r), c in _cases(fixtures).items() if s == set_name}
    assert rounds, f"no fixture cases for {set_name}"
    for number, cases in sorted(rounds.items()):
        folder = tmp_path / f"round{number}" / set_name
        folder.mkdir(parents=True)
        preds = folder / "generations.jsonl"
        with open(preds, "w", encoding="utf-8") as handle:
            for record in eval_set.records:
                completion = cases[record.id]["completion"] if record.id in cases else FILLER
                handle.write(json.dumps({"id": record.id, "question": record.question, "completion": completion},
                                        ensure_ascii=False) + "\n")
        assert score_main([str(preds), "--data-dir", str(shared)]) == 0
        samples = {}
        for line in (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            samples[row["id"]] = row
        for record_id, case in cases.items():
            got = samples[record_id]
            where = f"{set_name} id {record_id} {case['completion']!r} ({case['note']})"
            assert got["correct"] is case["correct"], where
            for field, sample_field in (("one_way", "correct_one_way"), ("refusal", "refusal"), ("empty", "empty"),
                                        ("format_ok", "format_ok")):
                if field in case:
                    assert got[sample_field] is case[field], f"{field}: {where}"
        metrics = json.loads((folder / "metrics.json").read_text())
        expected = sum(c["correct"] for c in cases.values()) / eval_set.count
        assert metrics["metrics"]["accuracy"]["value"] == pytest.approx(expected)
        assert metrics["metrics"]["accuracy"]["n"] == eval_set.count
        refusals = sum(bool(c.get("refusal")) for c in cases.values())
        assert metrics["metrics"]["refusal_rate"]["value"] == pytest.approx(refusals / eval_set.count)
    capsys.readouterr()


def test_multihop_fixture(fixtures, tmp_path):
    """HotpotQA and 2Wiki (with aliases and demonyms) in their upstream formats, yes/no included."""
    from factrl.evals.predictions import read_predictions
    from factrl.evals.provenance import recorded_generation
    from factrl.evals.results import score_set
    from factrl.evals.scorers import get_scorer

    expected = {  # id -> (completion, EM, F1), checked by hand against the official rules
        "h1": ("<answer>Yes.</answer>", 1.0, 1.0),
        "h2": ("<answer>Chief</answer>", 0.0, 0.5),
        "h3": ("<answer>yes, it was</answer>", 0.0, 0.0),  # gold 'no': the yes/no rule zeroes F1
        "h4": ("<answer>US</answer>", 1.0, 1.0),           # gold 'U.S.' -> 'us'
        "w1": ("<answer>American</answer>", 1.0, 1.0),      # a demonym of the answer entity
        "w2": ("<answer>He was French</answer>", 0.0, 0.5),
    }
    for set_name, data, aliases in (("hotpotqa", "hotpot_mini.json", None),
                                    ("twowiki", "twowiki_mini.json", "twowiki_aliases.jsonl")):
        eval_set = load_set(set_name, data=fixtures / data, aliases=fixtures / aliases if aliases else None)
        preds = tmp_path / f"{set_name}.jsonl"
        preds.write_text("".join(json.dumps({"id": r.id, "completion": expected[r.id][0]}) + "\n"
                                 for r in eval_set.records))
        generation = recorded_generation(tmp_path, limit=None, predictions=str(preds))
        doc = score_set(eval_set, read_predictions(preds), get_scorer("default"), generation, tmp_path / set_name,
                        str(preds))
        rows = [json.loads(x) for x in (tmp_path / set_name / "samples.jsonl").read_text().splitlines()]
        for row in rows:
            assert (row["em"], row["f1"]) == pytest.approx(expected[row["id"]][1:]), row["id"]
        assert doc["metrics"]["em"]["value"] == pytest.approx(sum(r["em"] for r in rows) / len(rows))
