"""Set registry and loaders: every accepted format, provenance, malformed records, the offline hub."""
from __future__ import annotations

import json
import time

import pytest

from factrl.harness.core.errors import DataError, HarnessError

from factrl.evals.sets import SetSpec, get_spec, load_set, set_names
from factrl.harness.core import registry


def _write(path, rows):
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def test_shared_files_load_with_the_paper_counts(shared):
    for name in ("nq_open", "popqa", "simpleqa", "truthfulqa"):
        eval_set = load_set(name, data_dir=shared)
        assert eval_set.count == get_spec(name).expected
        info = eval_set.describe()
        assert info["source"].startswith("file:") and len(info["sha256"]) == 64 and info["file_sha256"]
        assert info["revision"] == info["file_sha256"]
    popqa = load_set("popqa", data_dir=shared)
    assert len({r.question for r in popqa.records}) < popqa.count  # duplicates stay in the denominator
    assert [r.id for r in popqa.records[:3]] == ["0", "1", "2"]  # no upstream ids: row indexes
    tqa = load_set("truthfulqa", data_dir=shared)
    assert tqa.records[0].id == "1" and tqa.records[0].incorrect  # upstream ids kept
    assert tqa.records[0].references[0] == "The watermelon seeds pass through your digestive system"


def test_limit_and_content_hash(shared):
    full, head = load_set("nq_open", data_dir=shared), load_set("nq_open", data_dir=shared, limit=10)
    assert head.count == 10 and head.records == full.records[:10] and head.sha256 != full.sha256
    assert load_set("nq_open", data_dir=shared).sha256 == full.sha256
    with pytest.raises(DataError, match="positive"):
        load_set("nq_open", data_dir=shared, limit=0)


@pytest.mark.parametrize("row, refs", [
    ({"question": "q", "answer": "A", "aliases": ["A", "B"]}, ("A", "B")),                       # shared
    ({"question": "q", "answer": ["A", "B"]}, ("A", "B")),                                       # NQ-Open
    ({"question": "q", "question_id": "tc_1", "answer": {"value": "A", "aliases": ["B"]}}, ("A", "B")),  # TriviaQA hub
    ({"Question": "q", "QuestionId": "tc_1", "Answer": {"Value": "A", "Aliases": ["B"]}}, ("A", "B")),  # original
    ({"question": "q", "id": 7, "possible_answers": "[\"A\", \"B\"]"}, ("A", "B")),              # PopQA hub
    ({"problem": "q", "answer": "A", "metadata": "{}"}, ("A",)),                                 # SimpleQA
    ({"question": "q", "answers": ["A"]}, ("A",)),                                               # pool style
    ({"question": "q", "answer": "[1] footnote"}, ("[1] footnote",)),                             # not JSON
])
def test_closed_book_formats(tmp_path, row, refs):
    eval_set = load_set("nq_open", data=_write(tmp_path / "x.json", [row]))
    assert eval_set.records[0].question == "q" and eval_set.records[0].references == refs


def test_jsonl_csv_and_parquet(tmp_path):
    (tmp_path / "nq.jsonl").write_text('{"question": "q1", "answer": ["A"]}\n\n{"question": "q2", "answer": ["B"]}\n')
    assert load_set("nq_open", data=tmp_path / "nq.jsonl").count == 2
    (tmp_path / "simple.csv").write_text('metadata,problem,answer\n"{}","Who, exactly?","Ann ""Jo"" Lee"\n')
    assert load_set("simpleqa", data=tmp_path / "simple.csv").records[0].references == ('Ann "Jo" Lee',)
    (tmp_path / "TruthfulQA.csv").write_text(
        "Type,Category,Question,Best Answer,Correct Answers,Incorrect Answers,Source\n"
        'Adversarial,Misc,Why?,Because,"Because; No reason","Magic; Fate",x\n')
    record = load_set("truthfulqa", data=tmp_path / "TruthfulQA.csv").records[0]
    assert record.references == ("Because", "No reason") and record.incorrect == ("Magic", "Fate")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([{"id": "a1", "question": "q", "answer": "yes"}]), tmp_path / "h.parquet")
    assert load_set("hotpotqa", data=tmp_path / "h.parquet").records[0].id == "a1"


def test_twowiki_aliases_and_hub_style_rows(tmp_path, fixtures):
    merged = load_set("twowiki", data=fixtures / "twowiki_mini.json", aliases=fixtures / "twowiki_aliases.jsonl")
    assert "American" in merged.records[0].references and merged.records[0].references[0] == "United States of America"
    rows = [{"query_id": "x1", "query": "q?", "answers": ["France", "French Republic"]}]  # corag/multihopqa
    assert load_set("twowiki", data=_write(tmp_path / "w.json", rows)).records[0].references == ("France",
                                                                                                 "French Republic")


@pytest.mark.parametrize("rows, message", [
    ([{"question": "q", "answer": "A"}, {"question": "q2"}], r"record 1: field 'answer' is missing"),
    ([{"question": "", "answer": "A"}], r"record 0: field 'question' must be a non-empty string"),
    ([{"question": "q", "answer": "A", "aliases": "B"}, {"question": "q", "answer": "A", "aliases": [1]}],
     r"record 1: field 'aliases' must be a list of strings"),
    ([{"question": "q", "answer": 5}], r"record 0: field 'answer' must be a list of strings"),
    (["just a string"], r"record 0: expected an object"),
    ({"not": "a list"}, r"a JSON object without a 'Data'"),
    ([], r"has no records"),
])
def test_malformed_records_name_file_index_and_field(tmp_path, rows, message):
    path = _write(tmp_path / "bad.json", rows)
    with pytest.raises(DataError, match=message) as err:
        load_set("nq_open", data=path)
    assert "bad.json" in str(err.value) or "no records" in str(err.value)


def test_malformed_truthfulqa_and_bad_files(tmp_path):
    with pytest.raises(DataError, match="record 0: field 'incorrect_answers' is empty"):
        load_set("truthfulqa", data=_write(tmp_path / "t.json", [
            {"question": "q", "best_answer": "b", "correct_answers": ["b"], "incorrect_answers": []}]))
    (tmp_path / "bad.jsonl").write_text('{"question": "q", "answer": ["A"]}\n{oops\n')
    with pytest.raises(DataError, match=r"bad.jsonl:2: invalid JSON"):
        load_set("nq_open", data=tmp_path / "bad.jsonl")
    (tmp_path / "latin1.json").write_bytes('[{"question": "caf\xe9", "answer": "A"}]'.encode("latin-1"))
    with pytest.raises(DataError, match="not UTF-8"):
        load_set("nq_open", data=tmp_path / "latin1.json")
    with pytest.raises(DataError, match="no such file"):
        load_set("nq_open", data=tmp_path / "missing.json")


def test_hub_unreachable_fails_fast_with_a_fix():
    started = time.monotonic()
    with pytest.raises(DataError) as err:
        load_set("triviaqa")
    assert time.monotonic() - started < 10
    message = str(err.value)
    assert "mandarjoshi/trivia_qa" in message and "eval.data.triviaqa=PATH" in message and "not reachable" in message


def test_registry(tmp_path):
    # Names, tasks and the Macro are registry entries (duplicates: tests/core/test_registry_names.py).
    assert set(registry.macro_sets()) | {"hotpotqa", "twowiki", "demo"} <= set(set_names())
    assert all(isinstance(get_spec(name), SetSpec) for name in set_names())
    with pytest.raises(HarnessError, match="Did you mean 'nq_open'"):
        get_spec("nq-open")
    rows = [{"_id": "a", "question": "q", "answer": "Paris"}]
    assert load_set("twowiki", data=_write(tmp_path / "w.json", rows)).task == "multihop"  # the entry's task
    demo = load_set("demo")
    assert demo.source == "embedded:fanoutqa-demo" and demo.count > 100
