"""`harness eval --help` describes the command, and generation shows a progress bar."""
from __future__ import annotations

import re

from factrl.evals.backends.base import Backend, Generation
from factrl.evals.cli import eval_main
from factrl.evals.generate import SetJob, generate_sets, read_generations
from factrl.evals.loaders import Record
from factrl.evals.sets import EvalSet


def test_eval_help_says_what_the_command_does(capsys):
    assert eval_main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: harness eval")
    assert len(out.splitlines()) < 40  # not Hydra's config dump
    for option in ("model=", "adapter=DIR", "eval=OPTION", "eval.backend=hf|vllm|openai", "eval.limit=N",
                   "eval.scorer=", "examples:", "harness eval --cfg job"):
        assert option in out, option
    assert "smollm2-135m" in out and "closed-book" in out  # the presets, read from configs/
    assert "== Config ==" not in out


def test_cfg_job_still_prints_the_full_config(capsys):
    assert eval_main(["--cfg", "job", "model=tiny-llama"]) == 0
    out = capsys.readouterr().out
    assert "backend: hf" in out and "openai:" in out


class EchoBackend(Backend):
    name = "echo"

    def generate(self, requests):
        for i, request in enumerate(requests):
            yield i, Generation(f"<answer>{request.question}</answer>", "stop", 3)


def test_generation_shows_a_progress_bar_with_rate_and_eta(tmp_path, capsys):
    records = [Record(str(i), f"q{i}", ("x",)) for i in range(3)]
    job = SetJob(EvalSet("s", "closed_book", records, "t", None, "1"), tmp_path / "s")
    generate_sets([job], system="S", descriptor={"backend": "echo"}, make_backend=EchoBackend)
    err = capsys.readouterr().err
    assert "generating (echo)" in err and "3/3" in err
    assert re.search(r"\[\d\d:\d\d<\d\d:\d\d, +[\d.]+answer/s\]", err)  # elapsed<ETA, rate
    assert len(read_generations(job.path)) == 3
