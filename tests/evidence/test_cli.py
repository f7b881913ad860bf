"""`harness evidence build | query | info`, the dispatcher entry and the evidence configs."""
import json

import pytest

from factrl.harness.engine.cli import main as harness
from factrl.harness.services.evidence.cli import main as evidence_main

from ..helpers import harness as harness_subprocess


def test_build_query_info_round_trip(tmp_path, articles_file, capsys):
    out = tmp_path / "wiki.sqlite3"
    assert evidence_main(["build", str(articles_file), "--out", str(out), "--tokenizer", "words",
                          "--passage-tokens", "32"]) == 0
    assert "8 documents" in capsys.readouterr().out
    assert evidence_main(["query", "NEAR(Sartre AND \"Nobel", "capital of France", "--store", str(out),
                          "-k", "2", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["passages"][0]["title"] for r in rows] == ["Jean-Paul Sartre", "Paris"]
    assert evidence_main(["query", "city", "--title", "Paris;Zürich", "--store", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Paris:" in text and "Zürich:" in text and "Hilton" not in text
    assert evidence_main(["query", "--title", "Mona Lisa", "--store", str(out), "-k", "2"]) == 0
    assert "2 passages for 'Mona Lisa'" in capsys.readouterr().out
    assert evidence_main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "tokenizer  words" in text and "8 documents, 8 titles" in text and "hash       " in text
    assert evidence_main(["info", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["passage_tokens"] == 32


def test_user_mistakes_exit_2_with_one_line(tmp_path, articles_file, capsys):
    missing = str(tmp_path / "nowhere.sqlite3")
    assert harness(["evidence", "query", "x", "--store", missing]) == 2
    assert harness(["evidence", "info", missing]) == 2
    assert harness(["evidence", "query", "--store", missing]) == 2  # neither query nor --title
    assert harness(["evidence", "build", str(articles_file)]) == 2  # --out missing
    assert harness(["evidence", "build", "--demo", str(articles_file)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 5 and all(line.startswith("harness evidence: error: ") for line in err)
    assert "harness evidence build" in err[0] and missing in err[0]


def test_dispatcher_lists_and_runs_evidence(tmp_path):
    result = harness_subprocess("--help")
    assert "evidence" in result.stdout
    result = harness_subprocess("evidence", "info", str(tmp_path / "none.sqlite3"))
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0
    assert "does not exist; build it with `harness evidence build" in result.stderr


@pytest.mark.parametrize("name", ["demo", "file"])
def test_evidence_configs_compose_and_document_every_key(name):
    from importlib import resources

    from factrl.harness.engine.config import compose

    cfg = compose([f"evidence={name}"]).evidence
    assert cfg.name == name and cfg.k == 5
    text = resources.files("factrl.configs").joinpath("evidence", f"{name}.yaml").read_text()
    for line in text.splitlines():
        if line and not line.startswith((" ", "#", "name:")):
            assert "#" in line, line


def test_open_evidence_from_config(store_path):
    from factrl.harness.engine.config import compose
    from factrl.harness.core.errors import DataError
    from factrl.harness.services.evidence import open_evidence

    cfg = compose(["evidence=file"]).evidence
    with pytest.raises(DataError, match="evidence.store is not set"):
        open_evidence(cfg)  # a required store must not fall back to the demo store
    cfg.store = str(store_path)
    cfg.fuzzy_titles = False
    with open_evidence(cfg) as store:
        assert store.by_title("Sartre", k=1) == [] and store.by_title("Paris", k=1)[0].title == "Paris"


def test_empty_titles_texts_and_queries_are_named(tmp_path, articles_file, caplog, capsys):
    """An empty title is called empty (not missing); records with empty text are reported with
    their count and first line, not dropped silently; an empty query is refused."""
    import logging

    from .conftest import ARTICLES, write_jsonl

    untitled = write_jsonl(tmp_path / "untitled.jsonl", [ARTICLES[0], {"title": " ", "text": "x y"}])
    assert harness(["evidence", "build", str(untitled), "--out", str(tmp_path / "a.sqlite3"),
                    "--tokenizer", "words"]) == 2
    assert capsys.readouterr().err.strip() == (f"harness evidence: error: {untitled}:2: field 'title' is empty; "
                                               f"every document needs its article title.")
    records = [*ARTICLES[:3], {"title": "Blank", "text": "  "}, ARTICLES[3], {"title": "Empty", "text": ""}]
    source = write_jsonl(tmp_path / "some_empty.jsonl", records)
    out = tmp_path / "b.sqlite3"
    with caplog.at_level(logging.WARNING, logger="factrl.harness.services.evidence.build"):
        assert evidence_main(["build", str(source), "--out", str(out), "--tokenizer", "words"]) == 0
    assert "4 documents" in capsys.readouterr().out
    assert [r.getMessage() for r in caplog.records] == [
        f"evidence build: skipped 2 record(s) with empty 'text' (first: {source}:4)"]
    assert harness(["evidence", "query", "", "--store", str(out)]) == 2
    assert capsys.readouterr().err.strip() == ("harness evidence: error: query 1 is empty; give words to search "
                                               "for, or --title TITLE alone for an article's passages.")
