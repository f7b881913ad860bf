"""Training pool: validation with named fields, order, dedup, fingerprint, and the self-filter."""
from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from factrl.harness.core.errors import DataError
from factrl.harness.pool import load_pool, pool_fingerprint, validate_rows
from factrl.harness.pool.filter import judge, select
from tests.helpers import harness


def _cfg(path, **extra):
    return OmegaConf.create({"name": "file", "source": "file", "path": str(path), "shuffle_seed": 42, "limit": None,
                             "dedup_against": [], **extra})


def test_shared_pool_file_loads(shared_data):
    path = shared_data / "pools" / "nq_webq_curriculum_llama31_8b.json"
    rows = load_pool(_cfg(path))
    assert len(rows) == 4861  # no duplicates in the released pool
    assert all(isinstance(r["answers"], list) and r["answers"] for r in rows)
    # Same file and seed -> same order (every method sees the same pool in the same order).
    assert pool_fingerprint(load_pool(_cfg(path))) == pool_fingerprint(rows)
    assert pool_fingerprint(load_pool(_cfg(path, shuffle_seed=1))) != pool_fingerprint(rows)


@pytest.mark.parametrize("record, field", [
    ({"answers": ["x"]}, "question"),
    ({"question": "q?", "answers": []}, "answers"),
    ({"question": "q?", "answers": "x", "title": 3}, "title"),
])
def test_bad_records_name_file_index_and_field(tmp_path, record, field):
    path = tmp_path / "pool.json"
    path.write_text(json.dumps([{"question": "ok?", "answers": "a"}, record]))
    with pytest.raises(DataError, match=rf"pool.json, record 1: field '{field}'"):
        load_pool(_cfg(path))


def test_jsonl_pool_string_answers_and_repeats(tmp_path):
    path = tmp_path / "pool.jsonl"
    path.write_text('{"question": "Who?", "answers": "Me", "title": "T"}\n\n{"question": "Where?", "answers": ["Here"]}\n'
                    '{"question": "where", "answers": ["Again"]}\n')
    report: dict = {}
    rows = load_pool(_cfg(path, shuffle_seed=None), report=report)
    assert [r["answers"] for r in rows] == [["Me"], ["Here"]]
    assert report["repeated_in_pool"] == 1


def test_missing_and_non_utf8_files_are_clear(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        load_pool(_cfg(tmp_path / "nope.json"))
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe[]")
    with pytest.raises(DataError, match="not UTF-8"):
        load_pool(_cfg(bad))


def test_cli_reports_pool_field_errors_in_one_line(tmp_path):
    path = tmp_path / "pool.json"
    path.write_text(json.dumps([{"question": "q?"}]))
    rows_error = harness("pool", "filter", "model=tiny-llama", "pool=file", f"pool.path={path}",
                         f"output_dir={tmp_path / 'runs'}")
    assert rows_error.returncode == 2
    assert "record 0: field 'answers'" in rows_error.stderr and "Traceback" not in rows_error.stderr


def test_pool_is_deduplicated_against_evaluation_sets(shared_data, tmp_path):
    nq = json.loads((shared_data / "benchmarks" / "nq_open_validation.json").read_text())
    simpleqa = json.loads((shared_data / "benchmarks" / "simpleqa.json").read_text())
    pool = [
        {"question": nq[0]["question"].upper() + " ?", "answers": ["x"]},  # same after normalisation
        {"question": simpleqa[3]["question"], "answers": ["y"]},
        {"question": "A question no benchmark asks about the harness?", "answers": ["z"]},
    ]
    path = tmp_path / "pool.json"
    path.write_text(json.dumps(pool))
    eval_cfg = OmegaConf.create({"data_dir": str(shared_data / "benchmarks")})
    report: dict = {}
    rows = load_pool(_cfg(path, dedup_against=["nq_open", "simpleqa"]), eval_cfg, report=report)
    assert [r["answers"] for r in rows] == [["z"]]
    assert report == {"unavailable": [], "nq_open": 1, "simpleqa": 1, "repeated_in_pool": 0}
    # TriviaQA is not available offline here: an error by default, reported with dedup_missing=warn.
    with pytest.raises(DataError, match="deduplication against 'triviaqa'.*dedup_missing=warn"):
        load_pool(_cfg(path, dedup_against=["triviaqa"]), eval_cfg)
    report = {}
    rows = load_pool(_cfg(path, dedup_against=["triviaqa", "nq_open"], dedup_missing="warn"), eval_cfg, report)
    assert len(rows) == 2 and report["unavailable"] == ["triviaqa"] and report["nq_open"] == 1


def test_validate_rows_keeps_ids_and_strips():
    rows = validate_rows([{"id": 7, "question": " Q? ", "answers": [" A "]}], "x")
    assert rows == [{"id": "7", "question": "Q?", "answers": ["A"], "title": ""}]


def test_judge_uses_evaluator_rules():
    assert judge("<think>x</think><answer>Paris, France</answer>", ["Paris"])
    assert not judge("<answer>I don't know</answer>", ["Paris"])
    assert not judge("<answer>1</answer>", ["1945"])  # token boundaries
    assert not judge("no tags Paris", ["Paris"])


def test_select_keeps_learning_zone_and_first_anchors():
    rows = [{"id": str(i), "question": f"q{i}", "answers": ["a"]} for i in range(6)]
    counts = {"0": 0, "1": 1, "2": 4, "3": 3, "4": 4, "5": 2}
    kept, report = select(rows, counts, group=4, anchors=1)
    assert [r["id"] for r in kept] == ["1", "2", "3", "5"]  # 2 is the first mastered (anchor)
    assert report["learning_zone"] == 3 and report["anchors"] == 1
    assert report["n_correct_histogram"] == {0: 1, 1: 1, 2: 1, 3: 1, 4: 2}


def test_filter_writes_pool_and_resumes_from_progress(tmp_path):
    out = tmp_path / "filtered.json"
    args = ["pool", "filter", "model=tiny-llama", "pool.limit=4", "pool.filter.completions=2",
            "train.max_completion_length=4", f"pool.filter.out={out}", f"output_dir={tmp_path}"]
    first = harness(*args)
    assert first.returncode == 0, first.stderr[-2000:]
    progress = tmp_path / "filtered.progress.jsonl"
    assert len(_progress_records(progress)) == 4
    report = json.loads((tmp_path / "filtered.report.json").read_text())
    assert report["questions"] == 4 and sum(report["n_correct_histogram"].values()) == 4
    assert isinstance(json.loads(out.read_text()), list)
    again = harness(*args)
    assert again.returncode == 0
    assert len(_progress_records(progress)) == 4  # nothing sampled twice


def _progress_records(progress):
    """The per-question lines of a progress file (its first line is the settings key)."""
    return [r for r in map(json.loads, progress.read_text().splitlines()) if "id" in r]


def _filter_cfg(tmp_path, *extra):
    from factrl.harness.engine.config import compose

    return compose(["model=tiny-llama", "pool.limit=3", "train.max_completion_length=4", "pool.filter.batch_size=3",
                    f"pool.filter.out={tmp_path / 'filtered.json'}", f"output_dir={tmp_path}", *extra])


def test_filter_progress_from_other_settings_is_refused_or_restarted(tmp_path):
    """Counts made with G=2, T=0.7 never count for a rerun with G=3, T=1.3."""
    from factrl.harness.pool.filter import filter_task

    progress = tmp_path / "filtered.progress.jsonl"
    report_file = tmp_path / "filtered.report.json"
    filter_task(_filter_cfg(tmp_path, "pool.filter.completions=2"))
    assert {r["group"] for r in _progress_records(progress)} == {2}
    before = progress.read_text()
    changed = ["pool.filter.completions=3", "pool.filter.temperature=1.3"]
    with pytest.raises(DataError) as err:
        filter_task(_filter_cfg(tmp_path, *changed))
    message = str(err.value)
    assert str(progress) in message and "pool.filter.restart=true" in message
    assert "completions 2 -> 3" in message and "temperature 0.7 -> 1.3" in message and "\n" not in message
    assert progress.read_text() == before  # refused: nothing touched
    filter_task(_filter_cfg(tmp_path, *changed, "pool.filter.restart=true"))
    assert {r["group"] for r in _progress_records(progress)} == {3} and len(_progress_records(progress)) == 3
    report = json.loads(report_file.read_text())
    assert report["settings"]["completions"] == 3 and report["progress"]["key"]["temperature"] == 1.3
    assert report["progress"]["reused"] == 0 and report["progress"]["sampled"] == 3
    # Same settings again: everything reused, nothing sampled.
    filter_task(_filter_cfg(tmp_path, *changed))
    assert json.loads(report_file.read_text())["progress"] == {**report["progress"], "reused": 3, "sampled": 0}


def test_filter_progress_key_covers_model_seed_prompt_and_pool_file(tmp_path):
    from factrl.harness.services import models
    from factrl.harness.pool.filter import progress_key

    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps([{"question": "Who wrote Hamlet?", "answers": ["Shakespeare"]}]))
    common = ["pool=file", f"pool.path={pool}", "pool.dedup_against=[]"]
    cfg = _filter_cfg(tmp_path, *common)
    identity = models.resolve(cfg.model)
    rows = load_pool(cfg.pool)
    key = progress_key(cfg, identity, rows)
    assert key["model"]["id"] == "embedded:tiny-llama" and key["model"]["revision"] == identity.revision
    assert key["pool"]["file_sha256"] and key["prompt"]["hash"] and key["seed"] == 42
    for override in ("pool.filter.top_p=0.9", "pool.filter.max_new_tokens=8", "seed=1"):
        assert progress_key(_filter_cfg(tmp_path, *common, override), identity, rows) != key, override
    pool.write_text(json.dumps([{"question": "Who wrote Hamlet?", "answers": ["Shakespeare", "W. S."]}]))
    assert progress_key(cfg, identity, rows)["pool"]["file_sha256"] != key["pool"]["file_sha256"]


def test_evidence_only_keeps_the_rows_whose_article_the_store_holds():
    """pool.evidence_only (the demo grid): RLFH and FoRAG give no signal for a row without evidence."""
    from factrl.harness.engine.config import compose
    from factrl.harness.core.errors import ConfigError
    from factrl.harness.services.evidence import open_evidence
    from factrl.harness.pool import load_pool

    cfg = compose(["model=tiny-llama", "+pool.evidence_only=true"])
    every = load_pool(compose(["model=tiny-llama"]).pool, cfg.eval)
    kept = load_pool(cfg.pool, cfg.eval, evidence_cfg=cfg.evidence)
    with open_evidence(cfg.evidence) as store:
        assert all(store.by_title(r["title"], k=1) for r in kept)
        dropped = [r for r in every if r not in kept]
        assert dropped and not any(r.get("title") and store.by_title(r["title"], k=1) for r in dropped)
    assert kept == [r for r in every if r in kept]  # the shuffled order, filtered
    with pytest.raises(ConfigError, match="pool.evidence_only=true needs the run's evidence store"):
        load_pool(cfg.pool, cfg.eval)
