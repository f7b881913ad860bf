"""The scorer benchmark runs end to end (no timing assertion: speed is for the script to report)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_scorer.py"


def test_bench_scorer_runs(shared, tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_scorer", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--shared", str(shared), "--repeats", "1", "--out", str(tmp_path)]) in (0, 1)
    out = capsys.readouterr().out
    assert "closed-book predictions: 40,964" in out and "ratio (default speed / naive speed)" in out
    assert "truthfulqa decisions: 817" in out and (tmp_path / "bench_metrics.json").is_file()
