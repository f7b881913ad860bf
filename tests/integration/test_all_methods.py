"""Every in-tree method through one sweep: `harness run -m method=raw,corver,fspo,knowrl,rlfh,forag`
on tiny-llama against a scripted HTTP judge on 127.0.0.1 and a store the test writes, then
`harness leaderboard publish` shows all six in one table ("Runs")."""
from __future__ import annotations

import json

import pytest

from tests.helpers import harness
from tests.knowrl.conftest import ROWS
from tests.knowrl.judge_server import JudgeServer

pytestmark = pytest.mark.slow  # six short runs (two GRPO or PPO steps each) on 2 shared cores

METHODS = ("raw", "corver", "fspo", "knowrl", "rlfh", "forag")


def test_one_sweep_trains_every_method_and_publishes_one_table(tmp_path, store_path):
    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps([ROWS["curie"], ROWS["einstein"]]))
    store = tmp_path / "lb.sqlite"
    with JudgeServer(default="- Marie Curie was born in Warsaw.") as server:
        result = harness("run", "-m", f"method={','.join(METHODS)}", "model=tiny-llama", "judge=openai",
                         f"judge.base_url={server.url}", "judge.model=judge-test", "judge.api_key_env=null",
                         "judge.cache=null", "judge.max_failed_share=1.0", "evidence=file",
                         f"evidence.store={store_path}", "pool=file", f"pool.path={pool}", "pool.dedup_against=[]",
                         f"output_dir={tmp_path / 'runs'}", f"leaderboard.store={store}", timeout=1500)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for method in METHODS:
        runs = list((tmp_path / "runs").glob(f"*-{method}-tiny-llama-*"))
        assert len(runs) == 1, method
        info = json.loads((runs[0] / "run.json").read_text())
        assert info["status"] == "finished" and info["leaderboard"]["status"] == "recorded", (method, info)
    site = tmp_path / "site"
    published = harness("leaderboard", "publish", "--store", str(store), "--out", str(site))
    assert published.returncode == 0, published.stderr[-2000:]
    text = next(site.rglob("*.md")).read_text()
    table = text.split("### Closed-book QA accuracy (%)")[1].split("###")[0]
    methods = {cells[2].strip().rstrip(" ‡¶‖∅≈") for cells in (line.split("|") for line in table.splitlines())
               if len(cells) > 3 and cells[2].strip() not in ("Method", "---")}
    assert {"Raw", "CorVer", "FSPO", "KnowRL", "RLFH", "FoRAG"} <= methods, table
    # The run viewer: a page per run, each trained run's steps in shards with its reward records.
    from factrl.leaderboard.viewer import shards

    for method in METHODS:
        (page,) = (site / "viewer" / "runs").glob(f"*-{method}-tiny-llama-*.html")
        (run,) = (tmp_path / "runs").glob(f"*-{method}-tiny-llama-*")
        html = page.read_text()
        assert "the run directory was not found" not in html
        index = shards.read(site / "viewer" / "runs" / page.stem / "index.js")[1]
        assert index["sets"] and index["sets"][0]["n"] > 0, method
        rollouts = run / "train" / "rollouts.jsonl"
        if method != "raw" and rollouts.is_file():  # every completion the engine wrote is on the page
            written = sum(1 for line in rollouts.read_text().splitlines() if line.strip())
            assert sum(s["completions"] for s in index["steps"]) == written, method
        elif method != "raw":  # an engine before rollouts.jsonl: the page says what it cannot show
            assert "train/rollouts.jsonl: absent" in html, method
