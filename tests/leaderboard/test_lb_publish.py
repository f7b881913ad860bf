"""Publishing a version: every output written, versions kept apart, special characters as text."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.core.rundir import open_run, write_json
from factrl.leaderboard import Store, publish, record_run
from factrl.leaderboard.store import schema, versions
from factrl.leaderboard.testing import make_run_dir, write_timings

from .conftest import fill_paper_grid

NASTY = "<script>alert(1)</script> & {\\textbf{x}}_$5 #1 %2 ~^|*"
PNG = b"\x89PNG\r\n\x1a\n"


def real_raw_run(tmp_path: Path) -> Path:
    """run.json and config.yaml from the real `open_run` (harness run's own writer); metrics as
    the evaluator writes them (synthetic until the evaluator ships)."""
    cfg = compose([f"output_dir={tmp_path / 'real'}"])
    run = open_run(cfg, kind="raw")
    donor = make_run_dir(tmp_path / "donor", method="raw", model=str(cfg.model.name), scores={"demo": 0.12},
                         counts={"demo": 100})
    for file in (donor / "eval").rglob("metrics.json"):
        data = json.loads(file.read_text())
        write_json(run.path / file.relative_to(donor), data)
    run.finish()
    return run.path


def test_publish_writes_every_format(tmp_path, store_path):
    rows = fill_paper_grid(tmp_path / "runs", store_path)
    rows += len(record_run(real_raw_run(tmp_path), store_path))
    out = tmp_path / "site"
    manifest = publish(store_path, None, out, {"focus_method": "corver"})
    assert manifest["rows"] == rows and manifest["tables"] == ["accuracy", "time", "multihop"]
    for name in ("leaderboard.md", "tables.tex", "index.html", "accuracy.csv", "time.csv", "multihop.csv",
                 "rows.csv", "manifest.json"):
        assert (out / name).stat().st_size > 0, name
    for name in ("accuracy_vs_time.png", "gain_over_raw.png", "popularity_popqa.png"):
        data = (out / "plots" / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 5000, name
    assert manifest["plot_notes"] == []
    md = (out / "leaderboard.md").read_text()
    assert "# Leaderboard, version 1" in md and "| smollm2-135m | Raw |" in md
    assert "Demo" in md and "qwen3-4b" in md and "1.00×" in md
    with open(out / "accuracy.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    corver = next(r for r in table if r["model"] == "qwen3-4b" and r["method"] == "corver")
    assert float(corver["triviaqa"]) == pytest.approx(57.57) and corver["macro_diff"]
    record_files = sorted((out / "rows").glob("*.json"))
    assert len(record_files) == rows
    for file in record_files:
        assert not schema.errors(json.loads(file.read_text()), schema.ROW_SCHEMA), file
    assert len(list((out / "results").glob("*.json"))) == len({r["run"]["run_id"] for r in Store(store_path).rows()})
    html = (out / "index.html").read_text()
    assert html.count('<section class="prov" id="row-') == rows
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html


def test_published_files_are_readable_by_a_web_server(tmp_path, store_path):
    fill_paper_grid(tmp_path / "runs", store_path)
    out = tmp_path / "site"
    publish(store_path, None, out)
    written = [p for p in out.rglob("*") if p.is_file() and p.suffix in (".json", ".html", ".md", ".csv", ".tex")]
    assert {"manifest.json", "index.html"} <= {p.name for p in written} and any(p.parent.name == "rows" for p in written)
    assert {p.relative_to(out).as_posix(): oct(p.stat().st_mode & 0o777) for p in written} == \
        {p.relative_to(out).as_posix(): "0o644" for p in written}  # JSON as index.html, never mkstemp's 0600


def test_popularity_plot_is_skipped_with_a_note_without_data(tmp_path, store_path):
    fill_paper_grid(tmp_path / "runs", store_path, popularity=False)
    manifest = publish(store_path, "1", tmp_path / "site")
    assert not (tmp_path / "site" / "plots" / "popularity_popqa.png").exists()
    assert any("popularity" in note for note in manifest["plot_notes"])


def test_rows_of_different_versions_never_share_a_table(tmp_path, store_path, monkeypatch):
    monkeypatch.setitem(versions.VERSIONS, "2", {"date": "2026-12-01", "summary": "test", "prompt": {}})
    runs = tmp_path / "runs"
    record_run(make_run_dir(runs, method="raw", model="old-model", scores={"triviaqa": 0.5}), store_path)
    record_run(make_run_dir(runs, method="raw", model="new-model", scores={"triviaqa": 0.6}), store_path, "2")
    assert Store(store_path).versions() == {"1": 1, "2": 1}
    one = (Path(publish(store_path, "1", tmp_path / "v1")["store"]), (tmp_path / "v1" / "leaderboard.md").read_text())
    two = (tmp_path / "v2", publish(store_path, "2", tmp_path / "v2"))
    assert "old-model" in one[1] and "new-model" not in one[1]
    md2 = (two[0] / "leaderboard.md").read_text()
    assert "new-model" in md2 and "old-model" not in md2
    with pytest.raises(Exception, match="no rows of leaderboard version 1 .*it holds"):
        Store(store_path).remove([r["row_id"] for r in Store(store_path).rows("1")])
        publish(store_path, "1", tmp_path / "v1b")


def test_special_characters_render_as_text_in_every_format(tmp_path, store_path):
    runs = tmp_path / "runs"
    record_run(make_run_dir(runs, method="raw", model=NASTY, scores={"triviaqa": 0.5}), store_path)
    run = make_run_dir(runs, method="corver", model=NASTY, scores={"triviaqa": 0.6}, train_phases={"rollout": 60})
    record_run(run, store_path)
    out = tmp_path / "site"
    publish(store_path, "1", out)
    html = (out / "index.html").read_text()
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; {\\textbf{x}}_$5" in html
    assert html.count("<script>") == 1  # the page's own sorting script only
    tex = (out / "tables.tex").read_text()
    assert r"\textless{}script\textgreater{}alert(1)\textless{}/script\textgreater{} \& \{\textbackslash{}textbf\{x\}\}\_\$5 \#1 \%2" in tex
    md = (out / "leaderboard.md").read_text()
    assert "&lt;script&gt;" in md and "<script>" not in md and "\\|\\*" in md
    with open(out / "accuracy.csv", newline="") as handle:
        assert {r["model"] for r in csv.DictReader(handle)} == {NASTY}  # CSV keeps the data verbatim
    assert (out / "plots" / "gain_over_raw.png").read_bytes().startswith(PNG)
    assert (out / "plots" / "accuracy_vs_time.png").read_bytes().startswith(PNG)


def test_write_timings_helper_matches_the_timer_schema(tmp_path):
    data = json.loads(write_timings(tmp_path / "t.json", {"init": 1.0, "update": 2.0}).read_text())
    assert not schema.errors(data, schema.TIMINGS_SCHEMA) and data["total_s"] == 3.0


def test_republishing_removes_files_that_are_no_longer_published(tmp_path, store_path):
    runs = tmp_path / "runs"
    record_run(make_run_dir(runs, method="raw", model="m", scores={"triviaqa": 0.5}), store_path)
    timed = make_run_dir(runs, method="corver", model="m", scores={"triviaqa": 0.6}, train_phases={"rollout": 60})
    gone = record_run(timed, store_path)
    out = tmp_path / "site"
    first = publish(store_path, None, out)
    listed = set(first["files"])
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} - {"manifest.json"}
    assert on_disk == listed  # the manifest lists every file, rows/ and results/ included
    assert f"rows/{gone[0]}.json" in listed and "time.csv" in listed
    user_file = out / "README.txt"
    user_file.write_text("not ours")
    Store(store_path).remove(gone)
    second = publish(store_path, None, out)
    now = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} - {"manifest.json", "README.txt"}
    assert now == set(second["files"]) and f"rows/{gone[0]}.json" not in now and "time.csv" not in now
    assert not any(name.startswith("results/") and "corver" in name for name in now)
    assert set(second["removed"]) == listed - set(second["files"]) and user_file.is_file()  # only ours removed
    assert json.loads((out / "manifest.json").read_text())["files"] == second["files"]
