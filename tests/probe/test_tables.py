"""The probe's Markdown/HTML/CSV/JSON tables and the CLI's own options."""
from __future__ import annotations

import csv
import io

import pytest

from factrl.harness.core.errors import DataError
from factrl.harness.probe import csv_text, html_table, load_results, markdown, write_tables

from .test_panel import synthetic


def results():
    a = synthetic(honest_correct=3.0, honest_wrong=0.0, hedged_gold=2.9, refusal=1.0, empty_think=None)
    b = synthetic(honest_correct=1.0, honest_wrong=-1.0, hedged_gold=-1.0, refusal=-0.5, empty_think=-1.0)
    b.method, b.model = "other", "<b>odd|model</b>"
    return [a, b]


def test_markdown_one_row_per_type_one_column_per_method():
    text = markdown(results())
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert lines[0] == "| completion | m v1 (x) | other v1 (<b>odd\\|model</b>) |"
    hedged = next(line for line in lines if "`hedged_gold`" in line)
    assert "2.90 ± 0.10 ✖ breach" in hedged and "-1.00 ± 0.10 |" in hedged
    b = results()
    b[1].guards = ["correctness=strict"]
    assert "| other v1 (<b>odd\\|model</b>) guarded: correctness=strict |" in markdown(b).splitlines()[2]
    refusal = next(line for line in lines if "`refusal`" in line)
    assert "1.00 ± 0.10 ⚠ hack" in refusal and "-0.50 ± 0.10 ⚠ hack" in refusal
    assert "no signal" in next(line for line in lines if "`empty_think`" in line)
    assert "probe panel version 2" in text and "⚠ hack" in text.split("\n\n")[-1]


def test_html_escapes_and_marks_cells():
    page = html_table(results())
    assert "&lt;b&gt;odd|model&lt;/b&gt;" in page and "<b>odd" not in page
    assert '<td class="breach">2.90 ± 0.10 ✖ breach</td>' in page
    assert '<td class="missing">n/a</td>' in page  # a type the first result did not score


def test_csv_long_format_and_json_round_trip(tmp_path):
    rows = list(csv.DictReader(io.StringIO(csv_text(results()))))
    assert len(rows) == 5 + 5
    first = rows[0]
    assert first["method"] == "m" and first["type"] == "honest_correct" and first["verdict"] == "reference"
    paths = write_tables(results(), tmp_path / "out")
    back = load_results(paths["json"])
    assert [r.to_dict() for r in back] == [r.to_dict() for r in results()]
    assert paths["md"].read_text() == markdown(results())
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(DataError, match="not a probe results file"):
        load_results(bad)


def test_cli_options(capsys):
    from factrl.harness.engine.cli import main
    from factrl.harness.probe.cli import split_options

    assert split_options(["method=corver", "--questions", "7", "--out=d"]) == ({"questions": "7", "out": "d"},
                                                                              ["method=corver"])
    assert main(["probe", "--questions", "zero", "method=corver"]) == 2
    assert "--questions zero" in capsys.readouterr().err
    assert main(["probe", "--help"]) == 0 and "harness probe -m" in capsys.readouterr().out
    assert split_options(["--guarded", "method=fspo", "--guards-file", "g.yaml"]) == (
        {"guarded": "true", "guards_file": "g.yaml"}, ["method=fspo"])


def test_guards_file_and_guarded_config(tmp_path):
    from factrl.harness.engine.config import compose
    from factrl.harness.core.errors import ConfigError
    from factrl.harness.probe.guards import guarded_config, load_guards

    cfg = compose(["method=fspo", "model=tiny-llama"])
    variant = guarded_config(cfg, load_guards())
    assert variant.method.correctness == "strict" and cfg.method.correctness == "protocol"  # a copy
    knowrl = compose(["method=knowrl", "model=tiny-llama"])
    assert guarded_config(knowrl, load_guards()).method.answer_guard == "strict"
    own = tmp_path / "g.yaml"
    own.write_text("guards:\n  fspo:\n    threshold: 0.7\n")
    assert guarded_config(cfg, load_guards(str(own))).method.threshold == 0.7
    assert guarded_config(knowrl, load_guards(str(own))) is None  # not listed: no guarded variant
    own.write_text("guards:\n  fspo: strict\n")
    with pytest.raises(ConfigError, match="guards"):
        load_guards(str(own))
    with pytest.raises(ConfigError, match="--guards-file"):
        load_guards(str(tmp_path / "missing.yaml"))


def test_default_out_names_methods_and_models():
    from pathlib import Path

    from factrl.harness.probe.cli import default_out

    a, b = results()
    b.model = "x"
    assert default_out("runs", [a, b, a]) == Path("runs/probe/m+other_x")


def test_leaderboard_publish_includes_probe_results(tmp_path):
    """`harness leaderboard publish --probe probe.json` puts the probe table beside the tables:
    in leaderboard.md, as probe.{html,csv,json} listed in the manifest; a bad file is refused."""
    from factrl.leaderboard import publish, record_run
    from factrl.leaderboard.testing import make_run_dir

    store = tmp_path / "lb.sqlite"
    record_run(make_run_dir(tmp_path / "runs", method="raw", model="qwen3-4b", scores={"demo": 0.1},
                            counts={"demo": 10}), store)
    paths = write_tables(results(), tmp_path / "probe")
    manifest = publish(store, None, tmp_path / "site", {"probe": [str(paths["json"])]})
    site = tmp_path / "site"
    assert manifest["probe"]["results"] == 2
    assert {"probe.html", "probe.csv", "probe.json", "probe.md"} <= set(manifest["files"])
    assert markdown(results()) in (site / "leaderboard.md").read_text()
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(DataError, match="not a probe results file"):
        publish(store, None, tmp_path / "site2", {"probe": [str(bad)]})
    assert not (tmp_path / "site2" / "leaderboard.md").exists()  # refused before anything is written
