"""benchmarks/gpu_hhem.py on the CPU (its tiny shape): the real loader at FSPO's two precisions."""
from __future__ import annotations

import re

from tests.helpers import benchmark_script


def _script():
    return benchmark_script("gpu_hhem")


def test_tiny_hhem_scores_in_bf16_within_tolerance_of_fp32(capsys):
    assert _script().main(["--shape", "tiny", "--device", "cpu", "--pairs", "24", "--premise-words", "30"]) == 0
    out = capsys.readouterr().out
    assert "precision bfloat16 weights, autocast none" in out  # the CPU: no autocast, recorded as such
    note = next(x for x in out.splitlines() if x.startswith("NOTE: HHEM bf16 on cpu: 24 pairs"))
    mean, largest = (float(x) for x in re.search(r"score: mean ([0-9.]+) \(tolerance 0.05\), max ([0-9.]+)",
                                                  note).groups())
    assert 0 < mean <= 0.05 and mean <= largest and "scores finite: True" in note  # bf16 differs, within tolerance
    assert re.search(r"planned peak [0-9.]+ GB .* vs measured [0-9.]+ GB", out)


def test_the_base_shape_needs_cuda(capsys):
    import torch

    if torch.cuda.is_available():
        return  # the GPU check runs it
    assert _script().main(["--shape", "base", "--device", "cpu"]) == 2
    assert "--shape base is the GPU check" in capsys.readouterr().out
