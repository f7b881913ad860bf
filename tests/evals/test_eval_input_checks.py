"""Small input mistakes: each fails with one line naming the field or option and the fix."""
from __future__ import annotations

import json

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.core.errors import DataError, HarnessError

from factrl.evals.cli import score_main
from factrl.evals.loaders import Record
from factrl.evals.predictions import align, read_predictions
from factrl.evals.scorers import get_scorer
from factrl.evals.sets import EvalSet, load_set
from factrl.evals.settings import EvalSettings

RECORDS = [Record(str(i), f"question {i}", ("Paris",)) for i in range(2)]


def _set():
    return EvalSet("tiny", "closed_book", RECORDS, "test", None, "1")


def _write(path, rows, prefix=b""):
    path.write_bytes(prefix + "".join(json.dumps(r) + "\n" for r in rows).encode())
    return path


def test_a_missing_id_is_called_missing(tmp_path):
    with pytest.raises(DataError, match=r"p.jsonl:1: field 'id' is missing"):
        read_predictions(_write(tmp_path / "p.jsonl", [{"completion": "x"}]))
    with pytest.raises(DataError, match=r"field 'id' must be a string or integer, got list"):
        read_predictions(_write(tmp_path / "p.jsonl", [{"id": [1], "completion": "x"}]))


def test_a_byte_order_mark_is_accepted_in_predictions(tmp_path):
    path = _write(tmp_path / "p.jsonl", [{"id": "0", "completion": "<answer>Paris</answer>"},
                                         {"id": "1", "completion": "x"}], prefix=b"\xef\xbb\xbf")
    rows = read_predictions(path)
    assert list(rows) == ["0", "1"]
    assert get_scorer("default").score(_set(), align(_set(), rows, str(path))).column("correct") == [True, False]


def test_a_question_that_is_not_a_string_is_an_error(tmp_path):
    with pytest.raises(DataError, match=r"p.jsonl:2: field 'question' must be a string .*got int"):
        read_predictions(_write(tmp_path / "p.jsonl", [{"id": "0", "completion": "x"},
                                                       {"id": "1", "question": 7, "completion": "x"}]))
    rows = {"0": {"id": "0", "completion": "x"}, "1": {"id": "1", "question": None, "completion": "x"}}
    align(_set(), rows, "rows")  # None: no question to compare, as when the field is absent
    rows["1"]["question"] = ["question 1"]
    with pytest.raises(DataError, match=r"rows: id '1': field 'question' must be a string, got list"):
        align(_set(), rows, "rows")


def test_score_arguments_are_checked_by_name(tmp_path):
    preds = _write(tmp_path / "p.jsonl", [{"id": "0", "completion": "x"}])
    with pytest.raises(HarnessError, match=r"^--limit 0: give a positive number"):
        score_main([str(preds), "--set", "demo", "--limit", "0"])
    with pytest.raises(DataError, match=r"^--data .*: is a folder; .*--data-dir"):
        score_main([str(preds), "--set", "demo", "--data", str(tmp_path)])
    with pytest.raises(DataError, match=r"^--data-dir .*: no such folder"):
        score_main([str(preds), "--set", "demo", "--data-dir", str(preds)])
    with pytest.raises(HarnessError, match=r"unknown scorer 'corver'. Did you mean 'corver-official'\?"):
        score_main([str(preds), "--set", "demo", "--scorer", "corver"])
    with pytest.raises(HarnessError, match=r"^--truthfulqa-no-comment: scorer corver-official does not use it"):
        score_main([str(preds), "--set", "demo", "--scorer", "corver-official", "--truthfulqa-no-comment"])
    with pytest.raises(HarnessError, match=r"^--no-truthfulqa-content-guard: scorer corver-official"):
        score_main([str(preds), "--set", "demo", "--scorer", "corver-official", "--no-truthfulqa-content-guard"])


def test_a_folder_as_a_data_file_gets_a_folder_error(tmp_path):
    with pytest.raises(DataError, match=r"is a folder, not a data file; .*eval.data_dir"):
        load_set("nq_open", data=tmp_path)


def test_options_a_scorer_does_not_use_are_errors():
    # Left at the harness default an option changes nothing, so it is no error.
    assert get_scorer("corver-official", truthfulqa_no_comment=False, truthfulqa_content_guard=True).options == {}
    with pytest.raises(HarnessError, match=r"scorer 'corver-official' does not use the option truthfulqa_no_comment"):
        get_scorer("corver-official", truthfulqa_no_comment=True)
    with pytest.raises(HarnessError, match=r"does not use the option truthfulqa_nocomment"):
        get_scorer("default", truthfulqa_nocomment=True)  # a typo is not silently dropped either
    with pytest.raises(HarnessError, match=r"^eval.truthfulqa_content_guard=False: scorer corver-official"):
        EvalSettings.from_config(compose(["eval=demo", "eval.scorer=corver-official",
                                          "eval.truthfulqa_content_guard=false"]).eval)
    assert EvalSettings.from_config(compose(["eval=demo", "eval.scorer=corver-official"]).eval)
