"""Every config group goes through the one parser before `harness run` makes a run directory or
loads anything: one bad value of each group is one line (exit 2) naming the key and the fix, and
a mistyped key of another option of the group says which option has it."""
from __future__ import annotations

import time

import pytest

from factrl.harness.engine.cli import main
from tests.helpers import harness

# One bad value per group (and per nested node), with the exact line `harness run` prints.
CASES = [
    ("seed=abc", "seed='abc' is not an integer; set a whole number"),
    ("stage=later", "stage='later': use all (train, then evaluate), train (train only) or eval (evaluate a trained run)"),
    ("threads=0", "threads=0: give auto or a positive number of threads"),
    ("device=gpu", "device='gpu': use auto, cpu or cuda (cuda:N for one GPU)"),
    ("eval_process=later", "eval_process='later': use auto (a fresh process on GPUs, several processes, DeepSpeed or "
                           "vLLM), fresh (always) or same (in the training process)"),
    ("claim.stale_s=soon", "claim.stale_s='soon' is not a number; set a number"),
    ("claim.heartbeat_s=0", "claim.heartbeat_s=0 is out of range; allowed: (0, inf)"),
    ("lora.r=two", "lora.r='two' is not an integer; set a whole number"),
    ("timer.autosave_s=-1", "timer.autosave_s=-1 is out of range; allowed: [0, inf)"),
    ("timer.enabled=maybe", "timer.enabled='maybe' must be true or false"),
    ("leaderboard.mode=cloud", "leaderboard.mode='cloud': use store (record to leaderboard.store) or rundir (write "
                               "only the run directory; `harness leaderboard rebuild` later)"),
    ("launcher.timeout_min=0", "launcher.timeout_min=0 is out of range; allowed: (0, inf)"),
    ("launcher=torchrun launcher.num_processes=0", "launcher.num_processes=0 is out of range; allowed: [1, inf)"),
    ("pool.limit=0", "pool.limit=0 is out of range; allowed: [1, inf)"),
    ("pool.dedup_missing=ignore", "pool.dedup_missing='ignore': use error or warn"),
    ("pool.filter.temperature=hot", "pool.filter.temperature='hot' is not a number; set a number"),
    ("corpus.max_diff_tokens=0", "corpus.max_diff_tokens=0 is out of range; allowed: [1, inf)"),
    ("corpus=remote corpus.min_interval_s=-1", "corpus.min_interval_s=-1 is out of range; allowed: [0, inf)"),
    ("evidence.k=0", "evidence.k=0 is out of range; allowed: [1, inf)"),
    ("eval.openai.concurrency=0", "eval.openai.concurrency=0 is out of range; allowed: [1, inf)"),
    ("eval.vllm.gpu_memory_utilization=2", "eval.vllm.gpu_memory_utilization=2 is out of range; allowed: (0, 1]"),
    ("model=qwen3-4b model.seed=x", "model.seed='x' is not an integer; set a whole number"),
    ("model.source=cloud", "model.source='cloud' is not valid; use hub, embedded, random, or set model.path"),
    ("model.decoding.top_p=0", "model.decoding.top_p=0 is out of range; allowed: (0, 1]"),
    ("train.steps=two", "train.steps='two' is not an integer; set a whole number"),
    ("judge=openai judge.timeout=-1", "judge.timeout=-1 is out of range; allowed: (0, inf)"),
    # a judge the method never opens is still checked by name (raw trains nothing: it once ran to the end)
    ("judge.backend=opnai", "judge.backend='opnai': unknown judge backend. Did you mean 'openai'? Available: embedded, "
                            "none, openai, reference."),
]


@pytest.mark.parametrize("method, override, message", [
    ("fspo", "method.nli.backend=hhemm", "method.nli.backend='hhemm' is not valid. Did you mean 'hhem'? Use one of "
                                         "deberta, hhem, standin."),
    ("knowrl", "method.nli.dtype=fp8", "method.nli.dtype='fp8' is not valid; use one of float32, bfloat16, float16, "
                                       "auto."),
])
def test_a_methods_nli_options_are_checked_before_the_run_directory(capsys, tmp_path, method, override, message):
    argv = ["run", f"method={method}", override, f"output_dir={tmp_path / 'runs'}",
            f"leaderboard.store={tmp_path / 'lb.sqlite'}"]
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert (code, lines) == (2, [f"harness run: error: {message}"])
    assert not (tmp_path / "runs").exists()


def _run_in_process(capsys, tmp_path, overrides: list[str]) -> tuple[int, list[str]]:
    argv = ["run", "method=raw", *overrides, f"output_dir={tmp_path / 'runs'}",
            f"leaderboard.store={tmp_path / 'lb.sqlite'}"]
    try:
        code = main(argv)
    except SystemExit as stop:  # hydra_entry: a failed single job exits with its code
        code = stop.code
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


@pytest.mark.parametrize("override, message", CASES, ids=[c[0] for c in CASES])
def test_one_bad_value_of_every_group_is_one_line_before_anything(capsys, tmp_path, override, message):
    code, lines = _run_in_process(capsys, tmp_path, override.split())
    assert (code, lines) == (2, [f"harness run: error: {message}"])
    assert not (tmp_path / "runs").exists() and not (tmp_path / "lb.sqlite").exists()


def test_a_key_of_another_judge_option_names_the_options_that_have_it(capsys, tmp_path):
    # The embedded models' default judge is `reference`, which has no base_url.
    code, lines = _run_in_process(capsys, tmp_path, ["judge.bse_url=x"])
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("harness run: error: judge.bse_url: unknown key (did you mean judge.base_url? an "
                               "option of judge=embedded, judge=openai); valid: backend, model, "), lines[0]
    code, lines = _run_in_process(capsys, tmp_path, ["judge=openai", "judge.bse_url=x"])  # there: a plain hint
    assert code == 2 and lines[0].startswith("harness run: error: judge.bse_url: unknown key (did you mean "
                                             "judge.base_url?); valid: backend, model, base_url"), lines
    code, lines = _run_in_process(capsys, tmp_path, ["corpus.min_interval=1"])  # corpus=demo: remote's key
    assert code == 2 and "(did you mean corpus.min_interval_s? an option of corpus=remote)" in lines[0], lines
    code, lines = _run_in_process(capsys, tmp_path, ["corpus.min_interval_s=1"])  # spelled right, corpus=demo lacks it
    assert code == 2 and lines[0].startswith("harness run: error: corpus.min_interval_s: unknown key (not a key of "
                                             "this corpus option; an option of corpus=remote); valid: "), lines
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("override, message", [
    ("claim.stale_s=soon", "claim.stale_s='soon' is not a number; set a number"),
    ("lora.r=two", "lora.r='two' is not an integer; set a whole number"),
])
def test_the_real_command_refuses_in_seconds(tmp_path, override, message):
    """Through a fresh process: one line, exit 2, no run directory, no model load (seconds, not
    the minute a model load and a run directory take)."""
    started = time.perf_counter()
    result = harness("run", "method=raw", override, f"output_dir={tmp_path / 'runs'}",
                     f"leaderboard.store={tmp_path / 'lb.sqlite'}", timeout=120)
    elapsed = time.perf_counter() - started
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert (result.returncode, lines) == (2, [f"harness run: error: {message}"]), result.stderr[-2000:]
    assert not (tmp_path / "runs").exists()
    assert elapsed < 30, elapsed  # measured about 1.5 s on an idle core; a loaded CI machine gets slack
