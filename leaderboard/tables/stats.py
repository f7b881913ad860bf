"""Uncertainty of accuracies and of their differences: standard errors, paired bootstrap
intervals, and seed aggregation.

Paired bootstrap. Two lines scored on the same questions (same set hash and limit, same
question order, checked by `outcomes.ids_sha256`) give a per-question difference d_i =
a_i - b_i, where a_i, b_i are a line's correctness on question i (0/1, or the mean over its
seeds). Resampling the n questions with replacement R times and taking the mean of d is the
standard paired bootstrap. Because d takes only a few distinct values v_1..v_U (three for
single seeds: -1, 0, 1), the counts of each value in a resample follow Multinomial(n,
share of each value), so we draw those counts directly: `rng.multinomial(n, p, size=R)`
(R x U) and the resampled means are `counts @ v / n`. This is the same distribution as
drawing R x n indices, at O(R x U) cost instead of O(R x n) memory (10,000 x 17,944 indices
would need 1.4 GB), which keeps publishing 5 sets x 40 rows well under a second.

The interval is the percentile interval (numpy's default linear quantiles) at `level`; the
generator is `numpy.random.default_rng(seed)`, created afresh for every comparison, so an
interval does not depend on which other comparisons a table makes. A macro difference
resamples each set independently with that set's own draw and averages per resample.

Minimum detectable difference (MDE). Beside its interval, every published difference carries
the smallest true difference that a paired test on these n questions would detect with power
`MDE_POWER` (80%) at two-sided level `MDE_ALPHA` (0.05), computed from the same paired
outcomes:

    MDE = (z_{1 - alpha/2} + z_{power}) * sd(d) / sqrt(n)        (2.8016 * standard error)

where sd(d) is the sample standard deviation (ddof 1) of the per-question differences d_i.
A macro difference is the mean of K per-set mean differences, each set resampled on its own
(as the interval does), so its standard error combines the per-set variances:
SE = sqrt(sum_k sd_k^2 / n_k) / K, and MDE = (z_{1 - alpha/2} + z_{power}) * SE. An observed
difference smaller than its MDE cannot be told from no difference at this n with the stated
power: the tables mark it (uncertainty.UNDECIDED_MARK). tests/leaderboard/test_lb_mde.py
checks the formula by simulation: at a true difference equal to the MDE, about 80% of paired
samples reject.

No question differs (MDE v2). When every per-question difference is the same (typically 0: two
lines that answer alike, as in a few-step demo), sd(d) is 0 and the plug-in MDE would be 0, which
reads as "any difference is detectable", the opposite of the truth. Then the variance is taken
from the rule of three instead: with none of n questions seen to differ, the share that would
differ is below 3/n at 95%, and differences of +-1 on that share have a variance of about 3/n.
So MDE = (z_{1 - alpha/2} + z_{power}) * sqrt(3/n) / sqrt(n) = 2.8016 * sqrt(3) / n (4.85 pp at
n = 100), and an observed difference of 0 is marked as undecided. A set of a macro difference
with no differing question contributes 3/n_k the same way.
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

import numpy as np

BOOTSTRAP_VERSION = "1"  # bump when the resampling scheme or quantile rule changes
MDE_VERSION = "2"  # 2: the rule-of-three variance when no question differs; bump when the MDE formula, its power or its level changes
MDE_POWER = 0.80
MDE_ALPHA = 0.05
DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0
DEFAULT_LEVEL = 0.95


@dataclass(frozen=True)
class BootstrapSettings:
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    level: float = DEFAULT_LEVEL

    def describe(self) -> dict:
        return {"method": "paired percentile bootstrap over questions", "version": BOOTSTRAP_VERSION,
                "resamples": self.resamples, "seed": self.seed, "level": self.level}


@dataclass(frozen=True)
class Interval:
    diff: float  # observed mean difference (fraction)
    low: float
    high: float

    @property
    def includes_zero(self) -> bool:
        return self.low <= 0.0 <= self.high


def resampled_means(diffs: np.ndarray, settings: BootstrapSettings) -> np.ndarray:
    """R bootstrap means of `diffs` (1-D), drawn through the multinomial of its distinct values."""
    values, counts = np.unique(np.round(np.asarray(diffs, dtype=float), 12), return_counts=True)
    n = int(counts.sum())
    rng = np.random.default_rng(settings.seed)
    draws = rng.multinomial(n, counts / n, size=settings.resamples)  # (R, U)
    return draws @ values / n


def _interval(observed: float, samples: np.ndarray, level: float) -> Interval:
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(samples, [tail, 1.0 - tail])
    return Interval(float(observed), float(low), float(high))


def paired_interval(a: np.ndarray, b: np.ndarray, settings: BootstrapSettings) -> Interval:
    """Interval of mean(a) - mean(b) for per-question scores of two lines on the same questions."""
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError(f"paired bootstrap needs two equal-length 1-D vectors, got {a.shape} and {b.shape}")
    diffs = a.astype(float) - b.astype(float)
    return _interval(float(diffs.mean()), resampled_means(diffs, settings), settings.level)


def macro_interval(pairs: Sequence[tuple[np.ndarray, np.ndarray]], settings: BootstrapSettings) -> Interval:
    """Interval of the mean over sets of per-set differences; each set resampled on its own."""
    observed, draws = [], []
    for index, (a, b) in enumerate(pairs):
        diffs = a.astype(float) - b.astype(float)
        observed.append(float(diffs.mean()))
        # A distinct seed per set: equal seeds would couple the sets' resamples.
        draws.append(resampled_means(diffs, BootstrapSettings(settings.resamples, settings.seed + index,
                                                              settings.level)))
    return _interval(float(np.mean(observed)), np.mean(draws, axis=0), settings.level)


def seed_summary(values: Sequence[float]) -> tuple[float, float | None, int]:
    """(mean, sample standard deviation or None for one seed, seed count) of per-seed accuracies."""
    k = len(values)
    mean = float(np.mean(values))
    return mean, (float(np.std(values, ddof=1)) if k > 1 else None), k


def mde_factor(power: float = MDE_POWER, alpha: float = MDE_ALPHA) -> float:
    """z_{1 - alpha/2} + z_{power}: 1.95996 + 0.84162 = 2.80158 for the defaults."""
    normal = NormalDist()
    return normal.inv_cdf(1.0 - alpha / 2.0) + normal.inv_cdf(power)


RULE_OF_THREE = 3.0  # with none of n seen, 3/n bounds a share at 95%


def _diff_variance(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """(sample variance of the paired differences, n); when every difference is the same (or
    n < 2) the rule-of-three variance min(1, 3/n) instead (module docstring, "No question differs")."""
    diffs = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    n = len(diffs)
    variance = float(np.var(diffs, ddof=1)) if n > 1 else 0.0
    if variance == 0.0 and n > 0:
        variance = min(1.0, RULE_OF_THREE / n)
    return variance, n


def paired_mde(a: np.ndarray, b: np.ndarray, power: float = MDE_POWER, alpha: float = MDE_ALPHA) -> float:
    """MDE (fraction) of mean(a) - mean(b) on the same questions (module docstring)."""
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError(f"the MDE needs two equal-length 1-D vectors, got {a.shape} and {b.shape}")
    variance, n = _diff_variance(a, b)
    return mde_factor(power, alpha) * float(np.sqrt(variance / n))


def macro_mde(pairs: Sequence[tuple[np.ndarray, np.ndarray]], power: float = MDE_POWER,
              alpha: float = MDE_ALPHA) -> float:
    """MDE (fraction) of the mean over sets of per-set paired differences (independent sets)."""
    if not pairs:
        raise ValueError("the macro MDE needs at least one set")
    total = 0.0
    for a, b in pairs:
        variance, n = _diff_variance(a, b)
        total += variance / n
    return mde_factor(power, alpha) * float(np.sqrt(total)) / len(pairs)


def mde_describe() -> dict:
    return {"formula": "(z_{1-alpha/2} + z_power) * sd(paired differences) / sqrt(n); macro: "
                       "sqrt(sum_k var_k / n_k) / K; var = 3/n (rule of three) when no question differs", "power": MDE_POWER, "alpha": MDE_ALPHA,
            "two_sided": True, "version": MDE_VERSION}


def ratio_interval(num_a: np.ndarray, den_a: np.ndarray, num_b: np.ndarray, den_b: np.ndarray,
                   settings: BootstrapSettings) -> Interval | None:
    """Paired interval of sum(num_a)/sum(den_a) - sum(num_b)/sum(den_b) over the same questions
    (answer accuracy: correct over attempted). The index bootstrap again, drawn through the
    multinomial of the distinct per-question tuples (num_a, den_a, num_b, den_b): a handful for
    0/1 outcomes, so R x U instead of R x n. Resamples where a line attempted nothing are dropped;
    None when the observed ratio is undefined (a line attempted no question)."""
    table = np.stack([np.asarray(v, dtype=float) for v in (num_a, den_a, num_b, den_b)], axis=1)
    if table.ndim != 2 or len(table) == 0 or table[:, 1].sum() == 0 or table[:, 3].sum() == 0:
        return None
    values, counts = np.unique(np.round(table, 12), axis=0, return_counts=True)
    n = int(counts.sum())
    rng = np.random.default_rng(settings.seed)
    draws = rng.multinomial(n, counts / n, size=settings.resamples)  # (R, U)
    sums = draws @ values  # (R, 4)
    ok = (sums[:, 1] > 0) & (sums[:, 3] > 0)
    samples = sums[ok, 0] / sums[ok, 1] - sums[ok, 2] / sums[ok, 3]
    observed = table[:, 0].sum() / table[:, 1].sum() - table[:, 2].sum() / table[:, 3].sum()
    return _interval(float(observed), samples, settings.level)


def ratio_mde(num_a: np.ndarray, den_a: np.ndarray, num_b: np.ndarray, den_b: np.ndarray,
              power: float = MDE_POWER, alpha: float = MDE_ALPHA) -> float | None:
    """MDE (fraction) of a difference of two ratios of sums on the same questions, by the delta
    method: each ratio r = sum(num)/sum(den) is replaced by its per-question influence
    (num_i - r den_i) / mean(den), and the MDE of the paired means of those (paired_mde, with
    its rule-of-three variance when they never differ). None when a ratio is undefined."""
    arrays = [np.asarray(v, dtype=float) for v in (num_a, den_a, num_b, den_b)]
    if arrays[1].sum() == 0 or arrays[3].sum() == 0:
        return None
    influence = []
    for num, den in (arrays[:2], arrays[2:]):
        ratio = num.sum() / den.sum()
        influence.append((num - ratio * den) / den.mean())
    return paired_mde(influence[0], influence[1], power, alpha)
