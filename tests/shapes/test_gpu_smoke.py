"""benchmarks/gpu_smoke.sh on a CPU: every step reports, the GPU steps SKIP with "no CUDA" (their
harness commands still compose), and a spent time budget skips the rest instead of stopping."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_smoke.sh"
GPU_STEPS = ("gpu_step", "ppo_step", "fspo_hhem", "vllm_run", "ppo_vllm", "vllm_eval", "hf_run", "critic_ckpt")
ORDER = ["setup", "env", "gpu_step", "ppo_step", "fspo_hhem", "assets", "vllm_run", "ppo_vllm", "vllm_eval", "hf_run",
         "critic_ckpt"]

pytestmark = pytest.mark.skipif(shutil.which("timeout") is None or shutil.which("bash") is None,
                                reason="needs bash and coreutils' timeout")


def _smoke(out: Path, budget: int, timeout: int = 600) -> dict:
    env = {**os.environ, "OUT": str(out), "PYTHON": sys.executable, "GPU_SMOKE_BUDGET_S": str(budget),
           "OMP_NUM_THREADS": "1"}
    done = subprocess.run(["bash", str(SCRIPT)], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    summary["stdout"] = done.stdout
    return summary


def _ending(stdout: str) -> list[str]:
    """The script's last lines: the 100-steps line, then one line per method, then the summary path."""
    return stdout.strip().splitlines()[-5:]


@pytest.mark.slow  # the setup check, the environment report and the assets on the CPU (~1.5 min)
def test_on_a_cpu_the_gpu_steps_skip_and_the_rest_passes(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA machine runs the GPU steps for real")
    summary = _smoke(tmp_path / "out", budget=480)
    steps = {s["step"]: s for s in summary["steps"]}
    assert [s["step"] for s in summary["steps"]] == ORDER
    for name in ("setup", "env", "assets"):
        assert steps[name]["status"] == "PASS", steps[name]
        assert Path(steps[name]["log"]).is_file()
    for name in GPU_STEPS:
        assert steps[name]["status"] == "SKIP" and steps[name]["note"].startswith("no CUDA"), steps[name]
    for name in ("vllm_run", "vllm_eval", "hf_run", "ppo_step"):  # their `harness` commands were composed
        assert steps[name]["note"] == "no CUDA (its command composes)", steps[name]
    assert steps["fspo_hhem"]["note"] == "no CUDA (the tiny shape passes on the CPU)", steps["fspo_hhem"]
    ending = _ending(summary["stdout"])
    assert ending[0].startswith("100 steps ~ ?:?? at the 1,000-token limit (gpu_step SKIP: no CUDA")
    assert ending[1].startswith("corver: SKIP") and ending[2].startswith("rlfh: one PPO step with its LoRA critic: SKIP: no CUDA")
    assert ending[3].startswith("fspo: SKIP: no CUDA") and ending[4].startswith("summary: ")
    assets = tmp_path / "out" / "assets"
    assert (assets / "model" / "config.json").is_file() and (assets / "corpus" / "index").is_dir()
    config = json.loads((assets / "model" / "config.json").read_text())
    assert config["head_dim"] == 64 and config["vocab_size"] == 32000
    assert "no CUDA" in steps["env"]["note"] and summary["elapsed_s"] <= 480


def test_a_spent_budget_skips_every_later_step_and_still_writes_the_summary(tmp_path):
    summary = _smoke(tmp_path / "out", budget=1, timeout=120)
    steps = {s["step"]: s for s in summary["steps"]}
    assert [s["step"] for s in summary["steps"]] == ORDER
    assert steps["setup"]["status"] == "SKIP" and "out of time" in steps["setup"]["note"]
    assert steps["assets"]["status"] == "SKIP" and "out of time" in steps["assets"]["note"]
    assert all(steps[name]["status"] == "SKIP" for name in GPU_STEPS)
    assert all(s["plan_gb"] is None for s in summary["steps"])
    table = summary["stdout"].split("step         status   seconds  peak      plan\n", 1)[1].splitlines()
    assert [line.split()[0] for line in table[:len(ORDER)]] == ORDER  # each step's peak beside its plan
    assert _ending(summary["stdout"])[0].startswith("100 steps ~ ?:??")


def test_the_script_parses():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0


def test_the_assets_script_takes_help_as_help_not_as_its_folder(tmp_path):
    # `python benchmarks/gpu_smoke_assets.py --help` once wrote model/, corpus/ and pool.json into a
    # folder named "--help" (its argument was read as the output folder).
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_smoke_assets.py"), "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "out_dir" in done.stdout
    assert list(tmp_path.iterdir()) == []
