"""Bad predictions files and the metrics-file schema: defined scores or one clear error, never a crash."""
from __future__ import annotations

import json
import time

import pytest

from factrl.harness.core.errors import DataError

from factrl.evals.cli import score_main
from factrl.evals.generate import read_generations
from factrl.evals.loaders import Record
from factrl.evals.metrics import SampleTable, aggregate, mean_stderr, metrics_file, run_metrics, validate_metrics_file
from factrl.evals.predictions import align, read_predictions
from factrl.evals.scorers import get_scorer
from factrl.evals.scorers.default import CLOSED_BOOK_METRICS
from factrl.evals.sets import EvalSet

RECORDS = [Record(str(i), f"question {i}", ("Paris",)) for i in range(4)]


def _set(n=4, task="closed_book"):
    return EvalSet("tiny", task, RECORDS[:n], "test", None, "1")


def _preds(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")  # escapes keep surrogates
    return path


def _rows(ids, completion="<answer>Paris</answer>"):
    return [{"id": i, "completion": completion} for i in ids]


@pytest.mark.parametrize("ids, message", [
    (["0", "1", "2"], r"3 predictions for 4 questions.*1 ids missing \(first: '3'\)"),
    (["0", "1", "2", "3", "9"], r"5 predictions for 4 questions.*1 ids not in the set \(first: '9'\)"),
    (["0", "1", "7", "8"], r"2 ids missing \(first: '2'\); 2 ids not in the set \(first: '7'\)"),
    ([], r"0 predictions for 4 questions of set .tiny.; the file is empty"),
])
def test_mismatched_predictions(tmp_path, ids, message):
    rows = read_predictions(_preds(tmp_path / "p.jsonl", _rows(ids)))
    with pytest.raises(DataError, match=message):
        align(_set(), rows, "p.jsonl")


def test_duplicates_and_question_mismatch(tmp_path):
    with pytest.raises(DataError, match=r"p.jsonl:2: id '0' appears twice"):
        read_predictions(_preds(tmp_path / "p.jsonl", _rows(["0", "0"])))
    rows = read_predictions(_preds(tmp_path / "q.jsonl", [{"id": "0", "question": "another", "completion": "x"}]))
    with pytest.raises(DataError, match="another version of the set"):
        align(_set(1), rows, "q.jsonl")


@pytest.mark.parametrize("content, message", [
    (b'{"id": "0", "completion": "caf\xe9"}\n', r"p.jsonl:1: not UTF-8"),
    (b'{"id": "0", "completion": "x"}\n{"id": "1", "compl', r"p.jsonl:2: invalid JSON"),
    (b'["0", "x"]\n', r"expected a JSON object"),
    (b'{"completion": "x"}\n', r"field 'id'"),
    (b'{"id": "0"}\n', r"field 'completion' is missing"),
    (b'{"id": "0", "completion": 3}\n', r"'completion' must be a string"),
])
def test_unreadable_lines(tmp_path, content, message):
    (tmp_path / "p.jsonl").write_bytes(content)
    with pytest.raises(DataError, match=message):
        read_predictions(tmp_path / "p.jsonl")


def test_defined_scores_for_odd_completions(tmp_path):
    odd = ["<answer>Paris", "<answer>x</answer><answer><answer>Paris</answer>", "\ud800 <answer>Paris</answer>",
           "<answer>" + "Paris " * 200_000 + "</answer>"]  # unclosed, nested, lone surrogate, 1.2 MB answer
    path = _preds(tmp_path / "p.jsonl", [{"id": str(i), "completion": c} for i, c in enumerate(odd)])
    rows = read_predictions(path)
    assert "\ud800" not in rows["2"]["completion"]  # replaced, so samples.jsonl can be written as UTF-8
    started = time.monotonic()
    table = get_scorer("default").score(_set(), align(_set(), rows, str(path)))
    assert time.monotonic() - started < 5
    assert table.column("correct") == [True, True, True, True]
    assert table.column("format_ok") == [False, False, True, True]
    for task in ("truthfulqa", "multihop"):
        get_scorer("default").score(_set(task=task), align(_set(), rows, str(path)))


def test_harness_score_reports_mismatch_as_one_line(tmp_path, shared, capsys):
    from factrl.harness.engine.cli import main

    _preds(tmp_path / "p.jsonl", _rows(["0", "1"]))
    assert main(["score", str(tmp_path / "p.jsonl"), "--set", "nq_open", "--data-dir", str(shared)]) == 2
    err = capsys.readouterr().err
    assert "2 predictions for 3610 questions" in err and "3608 ids missing (first: '2')" in err
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert main(["score", str(tmp_path / "empty.jsonl"), "--set", "nq_open", "--data-dir", str(shared)]) == 2
    assert "the file is empty" in capsys.readouterr().err
    assert main(["score", str(tmp_path / "p.jsonl")]) == 2
    assert "pass --set NAME" in capsys.readouterr().err


def test_resume_drops_a_torn_last_line(tmp_path):
    path = tmp_path / "generations.jsonl"
    path.write_bytes(b'{"id": "0", "completion": "a"}\n{"id": "1", "completion": "b"}\n{"id": "2", "comp')
    assert set(read_generations(path)) == {"0", "1"}
    assert path.read_bytes().endswith(b'"b"}\n')  # truncated to the last complete line
    path.write_bytes(b'{"id": "0", "completion": "a"}\n{broken}\n{"id": "2", "completion": "c"}\n')
    with pytest.raises(DataError, match="generations.jsonl:2: invalid JSON"):
        read_generations(path)  # damage in the middle is not an interrupted write


def test_aggregate_and_schema():
    assert mean_stderr([1, 0, 1, 0]) == pytest.approx((0.5, (1 / 3) ** 0.5 / 2))
    assert mean_stderr([True]) == (1.0, None)
    table = SampleTable(("correct", "correct_one_way", "na", "refusal", "empty", "format_ok", "answer_words",
                         "completion_words"),
                        [(True, True, False, False, False, True, 1, 9), (False, False, True, True, False, True, 3, 4)])
    metrics = aggregate(table, CLOSED_BOOK_METRICS)
    assert metrics["accuracy"] == {"value": 0.5, "n": 2, "stderr": 0.5, "higher_is_better": True}
    assert metrics["na_rate"]["higher_is_better"] is False and metrics["mean_answer_words"]["value"] == 2.0
    assert metrics["mean_completion_words"] == {"value": 6.5, "n": 2, "stderr": 2.5, "higher_is_better": False}
    generation = {k: None for k in ("backend", "model", "adapter", "prompt_version", "prompt_hash", "decoding", "limit")}
    doc = metrics_file(set_info=_set().describe(), scorer=get_scorer("default").describe(), generation=generation,
                       metrics=metrics)
    validate_metrics_file(json.loads(json.dumps(doc)))
    broken = json.loads(json.dumps(doc))
    broken["metrics"]["accuracy"]["value"] = float("nan")
    del broken["set"]["sha256"]
    with pytest.raises(ValueError, match=r"missing set.sha256.*accuracy.value must be a finite number"):
        validate_metrics_file(broken)


def test_run_level_macro():
    def doc(acc):
        return {"metrics": {"accuracy": {"value": acc}}}

    five = {name: doc(v) for name, v in zip(["triviaqa", "nq_open", "popqa", "simpleqa", "truthfulqa"],
                                            [0.5, 0.4, 0.3, 0.2, 0.1])}
    macro = run_metrics({**five, "hotpotqa": {"metrics": {"em": {"value": 1.0}}}})["macro"]["closed_book_accuracy"]
    assert macro["value"] == pytest.approx(0.3) and macro["n_sets"] == 5 and macro["complete"]
    partial = run_metrics({"nq_open": doc(0.4), "demo": doc(1.0)})["macro"]["closed_book_accuracy"]
    assert partial["n_sets"] == 1 and not partial["complete"]
    assert run_metrics({"demo": doc(1.0)})["macro"] == {}
    assert run_metrics({"demo": doc(1.0)})["schema"] == "factrl.run.metrics/1"


def test_score_cli_help_inference_and_scorer_folder(tmp_path, shared, capsys):
    from factrl.evals.sets import load_set

    with pytest.raises(SystemExit):
        score_main(["--help"])
    assert "PREDICTIONS is a JSONL file" in capsys.readouterr().out
    folder = tmp_path / "eval" / "simpleqa"
    folder.mkdir(parents=True)
    eval_set = load_set("simpleqa", data_dir=shared, limit=5)
    _preds(folder / "generations.jsonl", [{"id": r.id, "completion": f"<answer>{r.references[0]}</answer>"}
                                          for r in eval_set.records])
    # The set comes from the folder name; the limit must be given the first time.
    assert score_main([str(folder / "generations.jsonl"), "--data-dir", str(shared), "--limit", "5"]) == 0
    first = json.loads((folder / "metrics.json").read_text())
    assert first["metrics"]["accuracy"]["value"] == 1.0 and first["set"]["limit"] == 5
    # Scoring the folder of sets again reads set, data file and limit from that metrics.json.
    assert score_main([str(tmp_path / "eval")]) == 0
    assert json.loads((tmp_path / "eval" / "metrics.json").read_text())["macro"]["closed_book_accuracy"]["n_sets"] == 1
    assert score_main([str(tmp_path / "eval"), "--scorer", "corver-official"]) == 0
    compat = json.loads((tmp_path / "eval" / "scorer-corver-official" / "simpleqa" / "metrics.json").read_text())
    assert compat["scorer"]["name"] == "corver-official"
    assert json.loads((folder / "metrics.json").read_text())["scorer"]["name"] == "default"  # untouched
    capsys.readouterr()
