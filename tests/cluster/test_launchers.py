"""Cluster launchers (configs/hydra/launcher/): Slurm composes and renders its sbatch file,
submitit_local really runs a tiny job, and `leaderboard=rundir` leaves the store to a rebuild."""
from __future__ import annotations

import json
import os
import shlex
import sqlite3

import pytest

pytest.importorskip("hydra_plugins.hydra_submitit_launcher",
                    reason="the `cluster` extra (hydra-submitit-launcher) is not installed")

from tests.helpers import harness  # noqa: E402

SLURM_FIELDS = ["hydra.launcher.partition=gpu-a100", "hydra.launcher.gpus_per_node=2",
                "hydra.launcher.timeout_min=90", "hydra.launcher.array_parallelism=3"]


def _hydra_config(overrides: list[str]):
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="factrl.configs", version_base="1.3"):
        return compose(config_name="config", overrides=["method=raw", "model=tiny-llama", *overrides],
                       return_hydra_config=True)


def test_slurm_launcher_composes_and_renders_the_fields_into_sbatch(tmp_path, monkeypatch):
    """The executor is built as the plugin's launch() builds it; nothing is submitted. submitit
    refuses to build a Slurm executor without `srun` on PATH, so a placeholder that only exits 1
    stands in for the cluster's binary (it is never called)."""
    import submitit
    from hydra.utils import instantiate
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
    from omegaconf import OmegaConf
    from submitit.slurm.slurm import _make_sbatch_string

    default = _hydra_config(["hydra/launcher=slurm"]).hydra.launcher
    assert (default.gpus_per_node, default.timeout_min, default.array_parallelism) == (1, 1440, 16)
    launcher = instantiate(_hydra_config(["hydra/launcher=slurm", *SLURM_FIELDS]).hydra.launcher)
    # Hydra's plugin discovery imports the module again, so compare the class by name.
    assert type(launcher).__module__.endswith("submitit_launcher") and type(launcher).__name__ == "SlurmLauncher"
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "srun").write_text("#!/bin/sh\nexit 1\n")
    (tmp_path / "bin" / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    executor = submitit.AutoExecutor(cluster="slurm", folder=tmp_path / "sub", slurm_max_num_timeout=0)
    base = set(OmegaConf.structured(BaseQueueConf).keys())
    executor.update_parameters(**{k if k in base else f"slurm_{k}": v for k, v in launcher.params.items()
                                  if k not in ("submitit_folder", "max_num_timeout")})
    sbatch = _make_sbatch_string(command="harness run", folder=tmp_path / "sub", map_count=5,
                                 **executor._executor.parameters)
    for line in ("--partition=gpu-a100", "--gpus-per-node=2", "--time=90", "--array=0-4%3", "--job-name=harness-run"):
        assert f"#SBATCH {line}\n" in sbatch, sbatch
    # The writable SQLite caches go to the node's own disk (WAL does not work on NFS), before the job starts.
    setup = ('[ -n "$TMPDIR" ] || export TMPDIR=/tmp\n'
             'export HARNESS_WRITABLE_CACHE="$TMPDIR/factrl-writable-$SLURM_JOB_ID"\n')
    assert setup in sbatch and sbatch.index(setup) < sbatch.index("harness run"), sbatch


@pytest.mark.parametrize("bad", ["hydra.launcher.gpus_per_node=two", "hydra.launcher.partitoin=gpu"])
def test_slurm_launcher_refuses_a_bad_field(bad):
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    with pytest.raises((HydraException, OmegaConfBaseException)):
        _hydra_config(["hydra/launcher=slurm", bad])


@pytest.mark.slow  # ~10 s of CPU (submitit's job process + a rebuild); ~20 s on a loaded 2-core machine
def test_local_launcher_runs_a_job_that_writes_only_its_run_directory(tmp_path):
    store = tmp_path / "lb.sqlite"
    result = harness("run", "-m", "hydra/launcher=local", "method=raw", "model=tiny-llama", "eval.limit=2",
                     f"output_dir={tmp_path / 'runs'}", "leaderboard=rundir", f"leaderboard.store={store}",
                     timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    (run,) = (tmp_path / "runs").glob("*-raw-tiny-llama-*")
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "finished"
    assert info["leaderboard"]["status"] == "not_recorded" and info["leaderboard"]["mode"] == "rundir"
    assert not store.exists()  # the job wrote no SQLite file
    # Ran through submitit, in a sweep folder of its own (runs/multirun/<date-time>/).
    assert list((tmp_path / "runs" / "multirun").glob("*/.submitit/*/*_result.pkl"))
    command = shlex.split(info["leaderboard"]["command"])
    assert command[:3] == ["harness", "leaderboard", "rebuild"]
    rebuilt = harness(*command[1:])
    assert rebuilt.returncode == 0, rebuilt.stderr
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT run_id, set_name FROM rows").fetchall() == [(run.name, "demo")]


def test_an_unknown_leaderboard_mode_stops_before_the_run(tmp_path):
    result = harness("run", "method=raw", "model=tiny-llama", "eval.limit=2", f"output_dir={tmp_path}",
                     "leaderboard=rundir", "leaderboard.mode=sqlite")
    assert result.returncode == 2
    assert "leaderboard.mode='sqlite': use store" in result.stderr and result.stderr.strip().count("\n") == 0
    assert not list(tmp_path.glob("*-raw-*"))  # no run directory was started


@pytest.mark.parametrize("launcher", ["basic", "local"])
def test_a_sweep_whose_job_failed_exits_nonzero(tmp_path, launcher):
    """Under submitit the job's one-line error used to stay in the job's process: the sweep exited 0."""
    result = harness("run", "-m", f"hydra/launcher={launcher}", "method=raw", "model=tiny-llama", "eval.limit=2",
                     f"output_dir={tmp_path / 'runs'}", "leaderboard=rundir", "leaderboard.mode=sqlite",
                     timeout=300)
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-3000:]
    assert "harness run: job 0 failed: leaderboard.mode='sqlite': use store" in result.stderr
    (sweep,) = (tmp_path / "runs" / "multirun").iterdir()
    failed = json.loads((sweep / ".failed" / "0.json").read_text())
    assert failed["exit_code"] == 2 and "leaderboard.mode=sqlite" in failed["overrides"]
