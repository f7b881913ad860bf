"""`harness leaderboard` commands, in process and once through the real dispatcher."""
from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.core.errors import HarnessError
from factrl.harness.core.prompts import PROMPT_VERSION, prompt_hash
from factrl.leaderboard import LEADERBOARD_VERSION, VERSIONS, record_run
from factrl.leaderboard.cli import main
from factrl.leaderboard.testing import make_run_dir
from factrl.leaderboard.store.versions import canonical

from ..helpers import harness

LEADERBOARD_DIR = Path(__file__).resolve().parents[2] / "leaderboard"


def test_add_list_export_publish_remove(runs, store_path, tmp_path, capsys):
    run = make_run_dir(runs, scores={"triviaqa": 0.6, "popqa": 0.2}, train_phases={"rollout": 3600})
    raw = make_run_dir(runs, method="raw", scores={"triviaqa": 0.5, "popqa": 0.1})
    assert main(["add", str(run), str(raw), "--store", str(store_path)]) == 0
    assert "added 2 row(s)" in capsys.readouterr().out
    assert main(["list", "--store", str(store_path)]) == 0
    listing = capsys.readouterr().out
    assert "4 row(s) in version 1" in listing and "1:00:00" in listing and "60.00" in listing
    assert main(["list", "--store", str(store_path), "--method", "raw", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(json.loads(line)["method"]["name"] == "raw" for line in lines)
    assert main(["list", "--store", str(store_path), "--model", "qwen3-4b", "--set", "popqa"]) == 0
    assert "2 row(s)" in capsys.readouterr().out
    assert main(["list", "--store", str(store_path), "--model", "qwen3"]) == 0
    assert "0 row(s)" in capsys.readouterr().out
    assert main(["export", "--store", str(store_path), "--out", str(tmp_path / "results")]) == 0
    files = sorted((tmp_path / "results").glob("*.json"))
    assert len(files) == 2
    other = tmp_path / "other.sqlite"
    assert main(["add", *map(str, files), "--store", str(other)]) == 0
    capsys.readouterr()
    assert main(["publish", "--store", str(other), "--out", str(tmp_path / "site"), "--focus", "raw"]) == 0
    assert "published leaderboard version 1 (4 rows" in capsys.readouterr().out
    assert "Raw (ours)" in (tmp_path / "site" / "leaderboard.md").read_text()
    row_id = json.loads(lines[0])["row_id"]
    assert main(["remove", row_id, "--store", str(store_path)]) == 0
    assert main(["remove", row_id, "--store", str(store_path)]) == 1
    assert main(["versions", "--store", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert "version 1 (current)" in out and "rows in store: 3" in out and "pinned by store  set:popqa" in out


def test_add_counts_are_true_and_a_change_needs_replace(runs, store_path, tmp_path, capsys):
    run = make_run_dir(runs, scores={"triviaqa": 0.3, "popqa": 0.2})
    assert main(["add", str(run), "--store", str(store_path)]) == 0
    assert "added 2 row(s), replaced 0, unchanged 0 from" in capsys.readouterr().out
    assert main(["add", str(run), "--store", str(store_path)]) == 0
    assert "added 0 row(s), replaced 0, unchanged 2 from" in capsys.readouterr().out
    assert main(["export", "--store", str(store_path), "--out", str(tmp_path / "res")]) == 0
    capsys.readouterr()
    exported = next((tmp_path / "res").glob("*.json"))
    data = json.loads(exported.read_text())
    data["factrl"]["rows"].append(data["factrl"]["rows"][0])  # the same row twice: once "added 3", stored 2
    doubled = tmp_path / "doubled.json"
    doubled.write_text(json.dumps(data))
    with pytest.raises(HarnessError, match=r"appears 2 times in this input \(identical copies\)"):
        main(["add", str(doubled), "--store", str(tmp_path / "fresh.sqlite")])
    path = run / "eval" / "triviaqa" / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics["metrics"]["accuracy"]["value"] = 0.1
    path.write_text(json.dumps(metrics))
    with pytest.raises(HarnessError, match=r"metrics.accuracy.value 0.3 -> 0.1\); pass --replace"):
        main(["add", str(run), "--store", str(store_path)])
    capsys.readouterr()
    assert main(["add", str(run), "--store", str(store_path), "--replace"]) == 0
    assert "added 0 row(s), replaced 1, unchanged 1 from" in capsys.readouterr().out


def test_add_reports_every_refusal(runs, store_path, tmp_path, capsys):
    good = make_run_dir(runs, scores={"triviaqa": 0.6})
    bad = tmp_path / "nowhere"
    with pytest.raises(HarnessError, match=r"1 of 2 input\(s\) refused; first: .*nowhere"):
        main(["add", str(bad), str(good), "--store", str(store_path)])
    assert "refused" in capsys.readouterr().err
    junk = tmp_path / "junk.json"
    junk.write_text("{")
    with pytest.raises(HarnessError, match="not valid JSON"):
        main(["add", str(junk), "--store", str(store_path)])


def test_layout_file_and_run_config(runs, store_path, tmp_path):
    record_run(make_run_dir(runs, method="raw", scores={"triviaqa": 0.5}), store_path)
    layout = tmp_path / "layout.yaml"
    layout.write_text("set_labels: {triviaqa: Trivia-QA (web)}\nmethod_labels: {raw: Base model}\n")
    assert main(["publish", "--store", str(store_path), "--out", str(tmp_path / "s"), "--layout", str(layout)]) == 0
    md = (tmp_path / "s" / "leaderboard.md").read_text()
    assert "Trivia-QA (web)" in md and "Base model" in md
    with pytest.raises(HarnessError, match="--layout"):
        main(["publish", "--store", str(store_path), "--out", str(tmp_path / "s"), "--layout", str(tmp_path / "x")])
    # The layout stays out of `harness run`'s config (and so out of its config hash).
    assert set(compose([]).leaderboard) == {"enabled", "mode", "store", "version"}


def test_schema_prints_json_schema(capsys):
    assert main(["schema", "row"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["$id"] == "factrl.leaderboard.row/1" and "metrics" in document["required"]


def test_user_errors_are_one_line_through_the_dispatcher(tmp_path):
    done = harness("leaderboard", "publish", "--store", str(tmp_path / "none.sqlite"), "--out", str(tmp_path / "o"),
                   cwd=tmp_path, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no leaderboard store" in done.stderr
    done = harness("leaderboard", "publish", "--version", "7", "--out", str(tmp_path / "o"), cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and "unknown leaderboard version '7'; valid: 1" in done.stderr


def test_versions_are_documented_and_the_prompt_is_frozen():
    changelog = (LEADERBOARD_DIR / "CHANGELOG.md").read_text()
    assert LEADERBOARD_VERSION in VERSIONS
    for name, spec in VERSIONS.items():
        assert re.search(rf"^## Version {re.escape(name)} \({spec['date']}\)", changelog, re.M), name
        date.fromisoformat(spec["date"])
    # Changing the shared prompt changes scores: it must come with a new leaderboard version.
    frozen = VERSIONS[LEADERBOARD_VERSION]["prompt"]
    assert (frozen["version"], frozen["hash"]) == (PROMPT_VERSION, prompt_hash()), \
        "harness/core/prompts.py changed: add a leaderboard version in leaderboard/store/versions.py and CHANGELOG.md"
    assert canonical({"t": 1.0, "k": None, "n": [2.0, True]}) == canonical({"n": [2, True], "t": 1})
