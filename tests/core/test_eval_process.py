"""Evaluation after training in a fresh clean process (harness/engine/run/eval_process.py): which runs use it,
the child's environment, results equal to the in-process evaluation, and resume after a kill
during evaluation."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factrl.harness.engine.config import compose
from factrl.harness.core.errors import ConfigError
from factrl.harness.engine.run.eval_process import clean_environment, needs_fresh
from tests.helpers import REPO, harness

TRAIN = ["method=corver", "model=tiny-llama", "train.steps=1", "train.questions_per_step=2",
         "train.completions_per_question=2", "train.max_completion_length=8", "eval.cache=false",
         "leaderboard=rundir"]
LAUNCHER_ENV = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29555", "ACCELERATE_MIXED_PRECISION": "no",
                "TORCHELASTIC_RUN_ID": "job7", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}


def test_the_child_environment_has_no_launcher_variables():
    env = {"RANK": "0", "WORLD_SIZE": "8", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "8", "MASTER_ADDR": "10.0.0.1",
           "MASTER_PORT": "29500", "ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "3",
           "TORCHELASTIC_RUN_ID": "x", "GROUP_RANK": "0", "ROLE_RANK": "0", "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
           "PATH": "/usr/bin", "HOME": "/root", "CUDA_VISIBLE_DEVICES": "0,1", "HF_HOME": "/data/hf",
           "SLURM_JOB_ID": "12", "OMP_NUM_THREADS": "1"}
    assert clean_environment(env) == {"PATH": "/usr/bin", "HOME": "/root", "CUDA_VISIBLE_DEVICES": "0,1",
                                      "HF_HOME": "/data/hf", "SLURM_JOB_ID": "12", "OMP_NUM_THREADS": "1"}


def test_which_runs_evaluate_in_a_fresh_process(monkeypatch):
    import torch

    monkeypatch.delenv("ACCELERATE_USE_DEEPSPEED", raising=False)
    cpu = compose(["model=tiny-llama"])
    cuda = torch.cuda.is_available()
    assert needs_fresh(cpu, trained=True, world_size=1) is cuda  # one CPU process: the trained model is reused
    assert needs_fresh(cpu, trained=False, world_size=1) is False  # nothing of training in this process
    assert needs_fresh(cpu, trained=True, world_size=2) and needs_fresh(cpu, trained=False, world_size=2)
    assert needs_fresh(compose(["train.use_vllm=true"]), trained=True, world_size=1)
    assert needs_fresh(compose(["eval.backend=vllm"]), trained=True, world_size=1)
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "true")
    assert needs_fresh(cpu, trained=True, world_size=1)
    assert needs_fresh(compose(["eval_process=fresh"]), trained=False, world_size=1)
    assert not needs_fresh(compose(["eval_process=same"]), trained=True, world_size=4)
    with pytest.raises(ConfigError, match="eval_process='child'"):
        needs_fresh(compose(["eval_process=child"]), trained=True, world_size=1)


def _generations(run: Path) -> dict:
    rows = [json.loads(line) for line in (run / "eval" / "demo" / "generations.jsonl").read_text().splitlines()]
    return {r["id"]: r["completion"] for r in rows}


@pytest.mark.slow  # two tiny trainings with evaluation (~1 min on 2 shared cores)
def test_fresh_process_evaluation_equals_the_in_process_one(tmp_path):
    fresh = harness("run", *TRAIN, "eval_process=fresh", f"output_dir={tmp_path / 'fresh'}", env=LAUNCHER_ENV)
    assert fresh.returncode == 0, fresh.stdout[-2000:] + fresh.stderr[-3000:]
    same = harness("run", *TRAIN, "eval_process=same", f"output_dir={tmp_path / 'same'}")
    assert same.returncode == 0, same.stdout[-2000:] + same.stderr[-3000:]
    (a,) = (tmp_path / "fresh").glob("*-corver-tiny-llama-*")
    (b,) = (tmp_path / "same").glob("*-corver-tiny-llama-*")
    assert a.name.split("-")[-1] == b.name.split("-")[-1]  # eval_process is not in the config hash
    log = (a / "run.log").read_text()
    assert "evaluating in a fresh process (removed from its environment: ACCELERATE_MIXED_PRECISION, MASTER_ADDR, " \
           "MASTER_PORT, TORCHELASTIC_RUN_ID, VLLM_ENABLE_V1_MULTIPROCESSING)" in log
    assert "launcher variables in its environment: none" in log  # written by the evaluation process itself
    assert "fresh process" not in (b / "run.log").read_text()
    assert _generations(a) == _generations(b)
    metrics = [json.loads((r / "metrics.json").read_text()) for r in (a, b)]
    assert [m["sets"]["demo"]["metrics"] for m in metrics][0] == metrics[1]["sets"]["demo"]["metrics"]
    assert metrics[0]["components"] == metrics[1]["components"]
    assert json.loads((a / "run.json").read_text())["status"] == "finished"


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.is_file() and "\nState:\tZ" in status.read_text())


@pytest.mark.slow  # a tiny training, an evaluation killed half-way, and its resume (~1 min)
def test_a_run_killed_during_fresh_evaluation_resumes_it(tmp_path):
    args = [*TRAIN, "eval_process=fresh", "eval.limit=40", "eval.batch_size=1", f"output_dir={tmp_path}"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    run = subprocess.Popen([sys.executable, "-m", "factrl.harness.engine.cli", "run", *args], cwd=REPO, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 400
    generations = None
    while time.time() < deadline and run.poll() is None:
        found = list(tmp_path.glob("*-corver-tiny-llama-*/eval/demo/generations.jsonl"))
        if found and found[0].read_text().count("\n") >= 3:
            generations = found[0]
            break
        time.sleep(0.02)
    assert generations is not None, "evaluation never started"
    children = _children(run.pid)
    assert children, "the evaluation runs in a child process"
    run.send_signal(signal.SIGKILL)  # the run only: its evaluation process must not outlive it
    run.wait()
    stop = time.time() + 30
    while time.time() < stop and any(_alive(c) for c in children):
        time.sleep(0.1)
    assert not any(_alive(c) for c in children), "the evaluation process outlived its run"
    written = [json.loads(x) for x in generations.read_text().splitlines() if x.strip()]
    assert 3 <= len(written) < 40, len(written)
    resumed = harness("run", *args)  # the dead run's claim is stale at once (same host, no such pid)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-3000:]
    rows = [json.loads(x) for x in generations.read_text().splitlines()]
    assert len({r["id"] for r in rows}) == 40 == len(rows)
    assert {r["id"]: r["completion"] for r in written}.items() <= {r["id"]: r["completion"] for r in rows}.items()
    metrics = json.loads((generations.parents[2] / "metrics.json").read_text())
    counts = metrics["sets"]["demo"]["generation"]["counts"]
    assert counts["resumed"] >= len(written) and counts["resumed"] + counts["generated"] == 40


def test_generation_processes_get_one_visible_gpu_each(monkeypatch):
    from factrl.harness.engine.run import gpus
    from factrl.harness.engine.run.eval_process import _devices

    monkeypatch.setattr(gpus, "device_files", lambda dev=None: 8)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert _devices(2) == ["3", "5"]
    with pytest.raises(ConfigError, match="eval.processes=3: only 2 GPU"):
        _devices(3)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert _devices(4) == ["0", "1", "2", "3"]
    monkeypatch.setattr(gpus, "device_files", lambda dev=None: 0)
    assert _devices(2) == [None, None]  # a CPU machine: N CPU processes


def test_shard_rows_are_merged_once(tmp_path):
    from factrl.harness.engine.run.eval_process import merge_shards

    out, shards = tmp_path / "eval", tmp_path / "eval-shards"
    (out / "demo").mkdir(parents=True)
    (out / "demo" / "generations.jsonl").write_text(json.dumps({"id": "a", "completion": "kept"}) + "\n")
    for k, rows in enumerate([[("a", "again"), ("c", "C")], [("b", "B")]]):
        (shards / str(k) / "demo").mkdir(parents=True)
        (shards / str(k) / "demo" / "generations.jsonl").write_text(
            "".join(json.dumps({"id": i, "completion": t}) + "\n" for i, t in rows))
    assert merge_shards(out, shards) == {"demo": 2}
    rows = [json.loads(x) for x in (out / "demo" / "generations.jsonl").read_text().splitlines()]
    assert {r["id"]: r["completion"] for r in rows} == {"a": "kept", "b": "B", "c": "C"} and len(rows) == 3
    assert merge_shards(out, shards) == {}  # a second merge adds nothing


@pytest.mark.slow  # two evaluations of tiny-llama, one in two generation processes (~1 min)
def test_data_parallel_generation_equals_one_process(tmp_path):
    common = ["model=tiny-llama", "eval.limit=6", "eval.batch_size=1", "eval.cache=false"]
    two = harness("eval", *common, "eval.processes=2", f"output_dir={tmp_path / 'two'}")
    assert two.returncode == 0, two.stdout[-2000:] + two.stderr[-3000:]
    one = harness("eval", *common, f"output_dir={tmp_path / 'one'}")
    assert one.returncode == 0, one.stdout[-2000:] + one.stderr[-3000:]
    (a,) = (tmp_path / "two").glob("*-eval-tiny-llama-*")
    (b,) = (tmp_path / "one").glob("*-eval-tiny-llama-*")
    assert _generations(a) == _generations(b) and len(_generations(a)) == 6
    log = (a / "run.log").read_text()
    assert "generation process 1 of 2" in log and "generation process 2 of 2" in log
    assert not (a / "eval-shards").exists()  # merged, then removed
    ma, mb = (json.loads((r / "metrics.json").read_text())["sets"]["demo"] for r in (a, b))
    assert ma["metrics"] == mb["metrics"]
    assert ma["generation"]["backend_settings"]["processes"] == 2  # recorded, as the batch size is
    assert "processes" not in mb["generation"]["backend_settings"]  # one-process descriptors are unchanged
