"""`harness grid`: the paper grid expands into exact sweeps, and the tiny grid skips its finished
cell and launches the rest through a real launcher."""
from __future__ import annotations

import itertools
import json
from collections import Counter

import pytest

from factrl.harness.engine.config import group_options
from factrl.harness.core.errors import ConfigError
from factrl.harness.engine.grid import load_grid, sweeps
from factrl.harness.engine.grid.cli import main
from tests.helpers import harness

PAPER_MODELS = {"llama-3.2-3b", "llama-3.1-8b", "qwen3-4b", "qwen3-8b", "olmo-2-13b", "qwen3-14b"}


def _expand(line: list[str]) -> list[tuple]:
    """The cells a `harness run -m` override list sweeps over, as (fixed, method, model, seed, experiment)."""
    fixed = tuple(o for o in line if o.split("=")[0] not in ("method", "model", "seed", "experiment"))
    axes = {k: v.split(",") for k, _, v in (o.partition("=") for o in line) if k in ("method", "model", "seed",
                                                                                        "experiment")}
    return [(fixed, m, mo, int(s), e) for m, mo, s, e in
            itertools.product(axes["method"], axes["model"], axes["seed"], axes.get("experiment", [""]))]


def test_paper_grid_expands_to_the_protocol_cells_and_exact_sweeps():
    grid = load_grid("paper", ["output_dir=/scratch/runs"])
    blocks = Counter(c.block for c in grid.cells)
    # The baselines run on the four main models; OLMo-2-13B and Qwen3-14B get Raw and CorVer only.
    assert blocks == {"main": 16, "rlfh-author-key": 2, "rlfh-adapted": 2, "additional": 4, "forag-adjusted": 2,
                      "forag-initial": 2, "ablations": 6, "aggregation": 2, "beyond-paper": 12}
    assert {c.model for c in grid.cells} == PAPER_MODELS
    assert {c.method for c in grid.cells if c.block != "beyond-paper"} == {"raw", "corver", "fspo", "knowrl", "rlfh", "forag"}
    # rows beyond the paper (plugins): on the four main models, in a block of their own
    main_models = PAPER_MODELS - {"olmo-2-13b", "qwen3-14b"}
    assert {(c.method, c.model) for c in grid.cells if c.block == "beyond-paper"} == {
        (m, model) for m in ("truthrl", "binary_rar", "rlcr") for model in main_models}
    for method in ("fspo", "knowrl", "rlfh", "forag"):  # RLFH, FoRAG: one setting on each main model
        assert sorted(c.model for c in grid.cells if c.method == method) == sorted(main_models), method
    # RLFH as CorVer's main table ran it (A.1.3): author-key on the 3B and 4B models, adapted on the 8B ones.
    assert {c.model: c.experiment for c in grid.cells if c.method == "rlfh"} == {
        "llama-3.2-3b": "rlfh-author-key", "qwen3-4b": "rlfh-author-key", "llama-3.1-8b": None, "qwen3-8b": None}
    from factrl.harness.core.registry import all_methods

    for cell in grid.cells:  # every name is a shipped option or an installed plugin (make setup installs them)
        assert (cell.method in group_options("method") or cell.method in all_methods()) and cell.model in group_options("model")
        assert cell.experiment is None or cell.experiment in group_options("experiment")
        assert cell.overrides[0] == "output_dir=/scratch/runs" and cell.seed == 42
    cells = [(c.fixed, c.method, c.model, c.seed, c.experiment or "") for c in grid.cells]
    lines = sweeps(grid.cells)
    assert sorted(cell for line in lines for cell in _expand(line)) == sorted(cells)  # each cell exactly once
    assert len(lines) == 12  # 4 main methods, 2 RLFH settings, 2 FoRAG allocations, the 8 CorVer experiments, 3 plugins
    # Two seeds more, and a cell already done: the sweeps still cover exactly the rest.
    more = load_grid("paper", [], seeds=[42, 43, 44], blocks=["main"])
    todo = [c for c in more.cells if not (c.method == "raw" and c.model == "qwen3-4b" and c.seed == 43)]
    got = sorted(cell for line in sweeps(todo) for cell in _expand(line))
    assert got == sorted((c.fixed, c.method, c.model, c.seed, c.experiment or "") for c in todo) and len(got) == 47


def test_a_paper_block_dry_run_composes_every_cell(tmp_path, capsys):
    assert main(["paper", "--dry-run", "--block", "aggregation", f"output_dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    assert "2 cells, 0 done, 2 todo" in out
    assert (f"harness run -m output_dir={tmp_path} leaderboard=rundir method=corver model=llama-3.2-3b seed=42 "
            "experiment=corver-min,corver-relcheck") in out


@pytest.mark.parametrize("text, message", [
    ("blocks: [{methods: [raw], models: [tiny-llama], seed: [1]}]", r"blocks\[0\]: unknown key\(s\) seed"),
    ("blocks: [{methods: raw, models: [tiny-llama]}]", r"blocks\[0\].methods: must be a non-empty list"),
    ("blocks: [{methods: [raw], models: [tiny-llama], seeds: [x]}]", r"blocks\[0\].seeds: must be integers"),
    ("cells: []", "needs `blocks:`"),
])
def test_bad_grid_files_name_the_field(tmp_path, text, message):
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as err:
        load_grid(str(path), [])
    assert str(path) in str(err.value)


def test_unknown_grid_and_block_are_one_line_errors():
    with pytest.raises(ConfigError, match="unknown grid 'papr'; shipped: demo, paper, tiny \\(configs"):
        load_grid("papr", [])
    with pytest.raises(ConfigError, match="--block nope: not in configs/grid/paper.yaml"):
        load_grid("paper", [], blocks=["nope"])


@pytest.mark.slow  # two real runs in subprocesses: ~15 s alone, ~40 s on a loaded 2-core machine
def test_tiny_grid_skips_the_finished_cell_and_launches_the_rest(tmp_path, capfd):
    runs = tmp_path / "runs"
    first = harness("run", "method=raw", "model=tiny-llama", "seed=42", "eval.limit=2", f"output_dir={runs}",
                    "leaderboard=rundir")  # as a grid job: the checkout's store stays untouched
    assert first.returncode == 0, first.stderr[-3000:]
    (done,) = runs.glob("*-raw-tiny-llama-*")
    assert main(["tiny", "--dry-run", f"output_dir={runs}"]) == 0  # the same lookup as `harness run`'s
    dry = capfd.readouterr().out
    assert "2 cells, 1 done, 1 todo" in dry and f"raw tiny-llama seed=42  {done}" in dry
    assert "seed=43" in dry.split("sweeps")[1] and "seed=42" not in dry.split("sweeps")[1]
    # In this process (the sweep itself is a real `harness run -m` subprocess, basic launcher).
    assert main(["tiny", "--launcher", "basic", f"output_dir={runs}"]) == 0
    out = capfd.readouterr().out
    assert "[1/1] harness run -m eval.limit=2" in out and "seed=43 hydra/launcher=basic" in out
    assert "2 cells: 1 already done, 1 launched in 1 sweep(s)" in out and "1 finished, 0 not finished" in out
    made = sorted(runs.glob("*-raw-tiny-llama-*"))
    assert len(made) == 2 and done in made
    new = next(p for p in made if p != done)
    info = json.loads((new / "run.json").read_text())
    assert info["seed"] == 43 and info["status"] == "finished" and info["leaderboard"]["status"] == "not_recorded"
    assert json.loads((done / "run.json").read_text())["attempts"] == 1  # the finished cell was not rerun
    assert main(["tiny", f"output_dir={runs}"]) == 0
    assert "nothing to launch: every cell is done" in capfd.readouterr().out


def _claim_foreign(cell_overrides, state="running"):
    """A fresh claim of another live holder (a job on another node) on the cell's run."""
    import time

    from factrl.harness.engine.run.claims import claim_path
    from factrl.harness.engine.config import compose

    path = claim_path(compose(cell_overrides))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"token": "another-grid", "state": state, "job_id": "777_0", "host": "node9",
                                "pid": 1, "heartbeat": time.time(), "stale_after_s": 86400}))
    return path


def test_a_claimed_cell_is_skipped_unless_relaunch(tmp_path, capsys):
    runs = tmp_path / "runs"
    grid = load_grid("tiny", [f"output_dir={runs}", "leaderboard=rundir"])
    first = next(c for c in grid.cells if c.seed == 42)
    _claim_foreign(first.overrides, state="pending")  # a job another grid submitted, still in the queue
    assert main(["tiny", "--dry-run", f"output_dir={runs}"]) == 0
    out = capsys.readouterr().out
    assert "2 cells, 0 done, 1 todo, 1 claimed by other jobs" in out
    assert "claimed" in next(line for line in out.splitlines() if "seed=42" in line)
    sweep = out.split("sweeps")[1]
    assert "seed=43" in sweep and "seed=42" not in sweep
    assert main(["tiny", "--dry-run", "--relaunch", f"output_dir={runs}"]) == 0
    assert "seed=42,43" in capsys.readouterr().out.split("sweeps")[1]


def test_parallel_defaults_to_every_sweep_for_slurm():
    from factrl.harness.engine.grid.launch import default_parallel

    assert default_parallel(None, "slurm", 8) == 8  # the paper grid's 8 sweeps queue at once
    assert default_parallel(None, "local", 8) == 1 and default_parallel(None, "basic", 8) == 1
    assert default_parallel(3, "slurm", 8) == 3


@pytest.mark.slow  # one real run in a subprocess (~15 s alone)
def test_the_grid_launches_around_a_claimed_cell_and_its_job_takes_the_pending_claim_over(tmp_path, capfd):
    from factrl.harness.engine.run.claims import claim_path
    from factrl.harness.engine.config import compose

    runs = tmp_path / "runs"
    grid = load_grid("tiny", [f"output_dir={runs}", "leaderboard=rundir"])
    held = _claim_foreign(next(c for c in grid.cells if c.seed == 42).overrides)
    other = claim_path(compose(next(c for c in grid.cells if c.seed == 43).overrides))
    assert main(["tiny", "--launcher", "basic", f"output_dir={runs}"]) == 0
    out = capfd.readouterr().out
    assert "skipped (claimed, --relaunch launches it anyway): raw tiny-llama seed=42" in out
    assert "1 claimed by other jobs, 1 launched in 1 sweep(s)" in out and "1 finished, 0 not finished" in out
    (made,) = runs.glob("*-raw-tiny-llama-*")
    assert json.loads((made / "run.json").read_text())["seed"] == 43
    assert json.loads(held.read_text())["token"] == "another-grid"  # the other holder's claim is untouched
    assert not other.exists()  # the grid's pending claim went to the job, which released it when it finished


@pytest.mark.slow  # one tiny training job and one evaluation job, in subprocesses (~40 s)
def test_eval_jobs_train_then_evaluate_in_jobs_of_their_own(tmp_path, capfd):
    runs = tmp_path / "runs"
    grid = tmp_path / "one.yaml"
    grid.write_text("blocks: [{name: one, methods: [corver], models: [tiny-llama], seeds: [42], overrides: "
                    "[train.steps=1, train.questions_per_step=2, train.completions_per_question=2, "
                    "train.max_completion_length=8, eval.limit=2]}]\n")
    assert main([str(grid), "--launcher", "basic", "--eval-jobs", f"output_dir={runs}"]) == 0
    out = capfd.readouterr().out
    assert "[1/1 train] harness run -m" in out and "stage=train hydra/launcher=basic" in out
    assert "[1/1 eval] harness run -m" in out and "stage=eval hydra/launcher=basic" in out
    assert "trained (stage=train); evaluate with the same command and stage=eval" in out
    assert "1 finished, 0 not finished" in out
    (run,) = runs.glob("*-corver-tiny-llama-*")  # one run directory: stage is not in the config hash
    info = json.loads((run / "run.json").read_text())
    assert info["status"] == "finished" and info["attempts"] == 2
    assert (run / "train" / "TRAINING_DONE").is_file() and (run / "metrics.json").is_file()
    assert len(list((runs / "multirun").iterdir())) == 2  # a sweep folder per sweep
    assert not list((runs / ".claims").glob("*.json"))
