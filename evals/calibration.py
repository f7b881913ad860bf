"""Calibration of stated confidences in a scored set: Brier score and expected calibration error.

For every method, not only RLCR: a sample counts when its completion states a confidence, read by
the harness's one rule (factrl.harness.core.answers.confidence: the last `<confidence>` block, a finite
number in [0, 1]), and the scorer gave it a `correct` verdict (multi-hop sets, scored by EM / F1,
have none). With q_i the stated confidence and c_i in {0, 1} the verdict of the k such samples:

- Brier = (1/k) sum_i (q_i - c_i)^2 (Brier 1950), with its standard error (the sample standard
  deviation of (q_i - c_i)^2 over sqrt(k), as evals/metrics.py's mean_stderr);
- ECE = sum_m (|B_m| / k) |acc(B_m) - conf(B_m)| over M = 10 equal-width bins of q (Guo et al.
  2017, "On Calibration of Modern Neural Networks", ICML, eq. 3; Naeini et al. 2015), acc and conf
  the bin's mean verdict and mean confidence, empty bins skipped. The bins are left-closed,
  [0, 0.1), [0.1, 0.2), ..., [0.9, 1.0], with 1.0 in the last, as the RLCR release bins them
  (damanimehul/RLCR@8904bed eval/eval_utils.py:78-95), except that its float edges
  (np.linspace) put 0.3, 0.6 and 0.7 into the bin below; here bin m = min(floor(10 q), 9), and
  floor(10 q) is exact at every tenth.

Intervals: a percentile bootstrap over the k samples (RESAMPLES resamples with replacement,
numpy.random.default_rng(SEED) afresh for each set, numpy's linear quantiles at LEVEL), the
leaderboard's convention for its intervals (leaderboard/tables/stats.py, which this layer cannot
import); each metric gets `low` and `high` from it, Brier its analytic standard error and ECE the
bootstrap standard deviation as `stderr`. Written as the set's metrics.json `calibration` when at
least one sample states a confidence, absent otherwise; it never changes `metrics`.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np

from factrl.harness.core.answers.confidence import stated_confidence

from .metrics import mean_stderr

BINS = 10
RESAMPLES = 1000
SEED = 0
LEVEL = 0.95
VERSION = "1"  # bump when the reading rule, the binning or the interval changes


def brier(confidences: np.ndarray, correct: np.ndarray) -> float:
    return float(np.mean((confidences - correct) ** 2))


def ece(confidences: np.ndarray, correct: np.ndarray, bins: int = BINS) -> float:
    """Expected calibration error over `bins` equal-width, left-closed bins (module docstring)."""
    index = np.minimum(np.floor(confidences * bins).astype(int), bins - 1)
    # |B_m|/k * |acc_m - conf_m| = |sum of c - sum of q over B_m| / k; an empty bin adds 0
    gap = np.abs(np.bincount(index, weights=correct, minlength=bins)
                 - np.bincount(index, weights=confidences, minlength=bins))
    return float(gap.sum() / len(confidences))


def _interval(values: np.ndarray) -> tuple[float, float]:
    low, high = np.quantile(values, [(1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2])
    return float(low), float(high)


def calibration_summary(samples: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The set's `calibration` entry, or None when no sample with a verdict states a confidence."""
    rows = list(samples)
    pairs = []
    for sample in rows:
        text = sample.get("completion")
        if "correct" not in sample or not isinstance(text, str):
            continue
        value = stated_confidence(text).value
        if value is not None:
            pairs.append((value, 1.0 if sample["correct"] else 0.0))
    if not pairs:
        return None
    q, c = (np.array(column, dtype=float) for column in zip(*pairs))
    k = len(q)
    _, brier_se = mean_stderr([float(x) for x in (q - c) ** 2])
    rng = np.random.default_rng(SEED)
    draws = rng.integers(0, k, size=(RESAMPLES, k)) if k * RESAMPLES <= 20_000_000 else None
    boot_brier, boot_ece = np.empty(RESAMPLES), np.empty(RESAMPLES)
    for r in range(RESAMPLES):
        pick = draws[r] if draws is not None else rng.integers(0, k, size=k)
        boot_brier[r], boot_ece[r] = brier(q[pick], c[pick]), ece(q[pick], c[pick])
    ece_se = float(np.std(boot_ece, ddof=1)) if k > 1 else None
    return {"n_with_confidence": k, "n_total": len(rows), "version": VERSION, "bins": BINS,
            "accuracy": float(c.mean()), "mean_confidence": float(q.mean()),
            "brier": {"value": brier(q, c), "stderr": brier_se, **dict(zip(("low", "high"), _interval(boot_brier)))},
            "ece": {"value": ece(q, c), "stderr": ece_se, **dict(zip(("low", "high"), _interval(boot_ece)))},
            "interval": {"method": "percentile bootstrap over the samples with a confidence", "resamples": RESAMPLES,
                         "seed": SEED, "level": LEVEL}}


def calibration_line(entry: Mapping[str, Any] | None) -> str:
    """`calibration: 12 of 40 state a confidence; Brier 0.2100, ECE 0.0300` ("" when none)."""
    if not entry:
        return ""
    return (f"calibration: {entry['n_with_confidence']} of {entry['n_total']} state a confidence; "
            f"Brier {entry['brier']['value']:.4f}, ECE {entry['ece']['value']:.4f}")


__all__ = ["BINS", "brier", "calibration_line", "calibration_summary", "ece"]
