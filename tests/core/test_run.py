"""`harness run` end to end on the tiny model: raw and CorVer, run directories, resume,
leaderboard rows from real runs, and publishing them."""
from __future__ import annotations

import json

import pytest
import yaml

from tests.helpers import harness, optimizer_stand_in

# A credential the runs carry but never write (raw and CorVer never open the judge).
SECRET_URL = ("judge=openai", "judge.base_url=http://user:sk-test-secret-value@127.0.0.1:9/v1")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two real runs (raw, CorVer) of tiny-llama into one leaderboard store."""
    root = tmp_path_factory.mktemp("runs")
    store = root / "lb.sqlite"
    common = ["model=tiny-llama", f"output_dir={root / 'runs'}", f"leaderboard.store={store}"]
    results = {}
    for method in ("raw", "corver"):
        result = harness("run", f"method={method}", *common, *SECRET_URL)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        results[method] = result
    return root, store, common, results


def _run_dir(root, method):
    return next((root / "runs").glob(f"*-{method}-tiny-llama-*"))


def test_raw_run_writes_a_complete_run_directory(runs):
    root, _, _, results = runs
    run = _run_dir(root, "raw")
    assert f"run directory: {run}" in results["raw"].stdout
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "finished" and info["method"] == "raw" and info["model_identity"]["name"] == "tiny-llama"
    metrics = json.loads((run / "metrics.json").read_text())
    demo = metrics["sets"]["demo"]
    assert demo["metrics"]["accuracy"]["n"] == 8  # tiny-llama's protocol limits the demo set to 8
    assert (run / "eval" / "demo" / "samples.jsonl").is_file()
    assert not (run / "train").exists() and not (run / "timings.json").exists()


def test_secrets_never_reach_the_run_directory(runs):
    root, _, _, _ = runs
    for method in ("raw", "corver"):
        run = _run_dir(root, method)
        for file in run.rglob("*"):
            if file.is_file():
                assert b"sk-test-secret-value" not in file.read_bytes(), file
        judge = yaml.safe_load((run / "config.yaml").read_text())["judge"]
        assert judge["base_url"] == "http://***REDACTED***@127.0.0.1:9/v1"


def test_corver_run_trains_logs_and_times(runs):
    root, _, _, _ = runs
    run = _run_dir(root, "corver")
    assert (run / "train" / "adapter" / "adapter_config.json").is_file()
    log = [json.loads(line) for line in (run / "train" / "log.jsonl").read_text().splitlines()]
    keys = set().union(*log)
    assert {"rewards/corver/correct_rate", "rewards/corver/format_rate", "rewards/corver/corpus_reward_mean",
            "rewards/corver/alignment_fallback_rate", "rewards/corver/lookup_seconds"} <= keys
    timings = json.loads((run / "timings.json").read_text())
    assert {"init", "rollout", "reward", "update", "save"} <= set(timings["phases"])
    assert timings["phases"]["rollout"]["seconds"] > 0
    generation = json.loads((run / "eval" / "demo" / "metrics.json").read_text())["generation"]
    assert generation["adapter"] and generation["adapter"]["sha256"]


def test_runs_record_their_reward_components(runs):
    """run.json and metrics.json carry the components that made the result; the
    embedded CorVer run uses stand-ins (heuristic extractor, demo index) and says so."""
    root, _, _, _ = runs
    corver = _run_dir(root, "corver")
    written = json.loads((corver / "train" / "components.json").read_text())
    assert written["schema"] == "factrl.components/1" and written["method"] == "corver"
    for file in ("run.json", "metrics.json"):
        data = json.loads((corver / file).read_text())
        assert data["components"] == written["components"], file
        assert data["stand_ins"] == sorted(["corpus", "extractor", *optimizer_stand_in()]), file
    assert written["components"]["extractor"]["backend"] == "heuristic"
    # The engine's own entries: CorVer's release optimizer and schedule, no std floor.
    optimizer, advantages = written["components"]["optimizer"], written["components"]["advantages"]
    assert (optimizer["optim"], optimizer["lr_scheduler"], optimizer["warmup_ratio"]) == ("adamw_8bit", "cosine", 0.03)
    assert advantages["advantage_std_floor"] == 0.0 and advantages["stand_in"] is False
    assert written["components"]["corpus"]["manifest_hash"] and written["components"]["settings"]["alphas"]
    raw = _run_dir(root, "raw")
    for file in ("run.json", "metrics.json"):
        data = json.loads((raw / file).read_text())
        assert (data["components"], data["stand_ins"]) == ({}, []), file


def test_rerun_of_a_finished_run_does_not_redo_it(runs):
    root, _, common, _ = runs
    again = harness("run", "method=raw", *common, *SECRET_URL)
    assert again.returncode == 0
    assert "already finished" in again.stdout
    assert len(list((root / "runs").glob("*-raw-tiny-llama-*"))) == 1


def test_leaderboard_publishes_real_runs(runs, tmp_path):
    _, store, _, _ = runs
    listed = harness("leaderboard", "list", "--store", str(store))
    assert listed.returncode == 0, listed.stderr
    assert "raw" in listed.stdout and "corver" in listed.stdout
    out = tmp_path / "site"
    published = harness("leaderboard", "publish", "--store", str(store), "--out", str(out))
    assert published.returncode == 0, published.stderr
    markdown = "\n".join(p.read_text() for p in out.glob("*.md"))
    assert "tiny-llama" in markdown and ("CorVer" in markdown or "corver" in markdown)
    assert any(out.glob("*.html")) and any(out.glob("*.csv")) and any(out.glob("*.tex"))


def test_multirun_sweep_writes_one_run_per_job(tmp_path):
    result = harness("run", "-m", "method=raw", "model=tiny-llama", "eval.limit=2,3", f"output_dir={tmp_path}",
                     "leaderboard.enabled=false")
    assert result.returncode == 0, result.stderr[-2000:]
    runs = sorted(tmp_path.glob("*-raw-tiny-llama-*"))
    assert len(runs) == 2
    counts = sorted(json.loads((r / "metrics.json").read_text())["sets"]["demo"]["metrics"]["accuracy"]["n"]
                    for r in runs)
    assert counts == [2, 3]
    assert "questions_per_step" in (runs[0] / "run.log").read_text()  # the config is logged first


def test_in_memory_trained_model_evaluates_like_the_saved_adapter(runs, tmp_path):
    """The run evaluates the model it just trained without reloading it; `harness eval` on the
    saved adapter (cache off) must produce the same generations."""
    root, _, _, _ = runs
    run = _run_dir(root, "corver")
    result = harness("eval", "model=tiny-llama", f"adapter={run / 'train' / 'adapter'}", "eval.cache=false",
                     f"output_dir={tmp_path}")
    assert result.returncode == 0, result.stderr[-2000:]
    fresh = next(tmp_path.glob("*")) / "eval" / "demo" / "generations.jsonl"

    def completions(path):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return {r["id"]: r["completion"] for r in rows}

    assert completions(fresh) == completions(run / "eval" / "demo" / "generations.jsonl")
