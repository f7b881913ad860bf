"""`harness index build | query | info`, the corpus configs, and the demo index."""
import json

import pytest

from factrl.harness.engine.cli import main as harness
from factrl.harness.services.corpus import open_counter
from factrl.harness.services.corpus.cli import corpus_config
from factrl.harness.services.corpus.cli import main as index_main


def test_build_query_info_round_trip(tmp_path, corpus_file, capsys):
    out = tmp_path / "cli-idx"
    assert index_main(["build", str(corpus_file), "--out", str(out), "--tokenizer", "tiny-llama"]) == 0
    assert "240 documents" in capsys.readouterr().out
    common = ["--index", str(out), "--tokenizer", "tiny-llama", "--no-cache", "--max-diff-tokens", "20"]
    assert index_main(["query", "Castle AND Violin", "Castle", "Castle AND Violin OR Tiger", "--json", *common]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["query"] for r in rows] == ["Castle AND Violin", "Castle", "Castle AND Violin OR Tiger"]
    assert all(r["error"] is None and r["count"] >= 0 for r in rows)
    assert rows[2]["count"] >= rows[0]["count"] and rows[1]["count"] > 0
    assert index_main(["query", "--pair", "the Castle", "a Violin", *common]) == 0
    assert "Castle AND Violin" in capsys.readouterr().out
    assert index_main(["info", str(out), "--verify"]) == 0
    text = capsys.readouterr().out
    assert "u16" in text and "tiny-llama" in text and "opened in a child process" in text
    assert "format     2 (documents tokenised after '')" in text


def test_failed_query_exits_1(tmp_path, built_index, capsys):
    args = ["query", "Castle AND " + " AND ".join(f"W{i}" for i in range(40)), "--index",
            str(built_index().path), "--no-cache"]
    assert index_main(args) == 1
    assert "failed" in capsys.readouterr().out


def test_user_mistakes_are_one_line_errors(tmp_path, capsys):
    assert harness(["index", "query"]) == 2
    assert harness(["index", "build", "--demo", str(tmp_path)]) == 2
    assert harness(["index", "build", str(tmp_path / "x.jsonl")]) == 2  # --out missing
    assert harness(["index", "info", str(tmp_path / "nowhere")]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("harness index: error:")]
    assert len(errors) == 4


@pytest.mark.parametrize("name", ["demo", "none", "wikipedia", "remote"])
def test_corpus_configs_compose_and_document_every_key(name):
    from importlib import resources

    from factrl.harness.engine.config import compose

    cfg = compose([f"corpus={name}"]).corpus
    assert cfg.name == name
    text = resources.files("factrl.configs").joinpath("corpus", f"{name}.yaml").read_text()
    for line in text.splitlines():
        if line and not line.startswith((" ", "#")):
            assert "#" in line or line.startswith(("name:", "backend: remote", "backend: none")), line


def test_demo_index_is_built_once_and_counts(capsys):
    """The embedded default run's corpus: built on first use under the harness cache."""
    cfg = {**corpus_config("demo"), "cache": False}
    with open_counter(cfg) as counter:
        assert counter.description["documents"] == 10033
        paris = counter.count(["Paris", "France"])
        assert paris.ok and paris.count > 5
        assert counter.count(["Stanley", "Kubrick"]).count >= 1
    with open_counter(cfg) as again:  # second opening reuses the index
        assert again.manifest_hash == counter.manifest_hash


def test_demo_lead_sections_find_their_subject():
    """Every lead section begins with its subject; with SmolLM2 (byte-level BPE) format 1
    stored that first word unmarked and counted only its mentions elsewhere."""
    import re

    from factrl.harness.services.corpus.sources import demo_corpus_path, iter_documents

    starts: dict[str, int] = {}
    for i, doc in enumerate(iter_documents([str(demo_corpus_path())])):
        match = re.match(r"([A-Z][a-z]{3,}) ", doc.text)
        if match:
            starts[match.group(1)] = starts.get(match.group(1), 0) + 1
        if i == 400:
            break
    with open_counter({**corpus_config("demo"), "cache": False}) as counter:
        counts = {word: counter.count_cnf([[word]]).count for word in starts}
    assert len(starts) > 100
    assert {w: (counts[w], n) for w, n in starts.items() if counts[w] < n} == {}
