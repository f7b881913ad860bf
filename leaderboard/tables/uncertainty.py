"""Seeds and intervals in the accuracy table.

Seeds: the runs of one (model, method) line are grouped into configurations: runs whose
method section (config hash and version), training steps, pool, prompt, decoding (less any
`seed` key) and evaluated sets agree differ only in their seed. A configuration keeps one run
per seed, the one with the most sets, then the highest mean primary metric. The line uses the configuration with the most sets and the
highest mean macro; its cells are the mean over its seeds, with the standard deviation and
the seed count (`harness run -m seed=42,43,44 ...` produces such runs). A line of one seed is
labelled as such in the uncertainty table.

Intervals: every difference the tables show (the focus line to the best competitor, each
line to Raw) gets a paired bootstrap interval (stats.py) when both lines store per-question
outcomes for the same questions (rows' `outcomes`, equal `ids_sha256`); a multi-seed line
uses the per-question mean over its seeds. A difference whose interval includes 0 is marked
with NOISE_MARK. Rows without outcomes (recorded before them) get no interval, and the
legend says so.

Minimum detectable differences: beside its interval, each such difference carries the MDE at
80% power (two-sided alpha 0.05) from the same paired outcomes (stats.py: paired_mde,
macro_mde); an observed difference whose size is below its MDE is marked UNDECIDED_MARK
("cannot decide at this n").
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..store import outcomes as outcomelib
from ..store import rows as rowlib
from ..store import versions
from .stats import (BOOTSTRAP_VERSION, MDE_ALPHA, MDE_POWER, BootstrapSettings, Interval, macro_interval, macro_mde,
                    paired_interval, paired_mde, seed_summary)

NOISE_MARK = "§"
UNDECIDED_MARK = "◇"

Runs = dict[str, dict[str, dict]]  # run_id -> set -> row


def settings_of(layout_settings: dict[str, Any]) -> BootstrapSettings:
    """`bootstrap: {resamples, seed, level}` of the layout (defaults: 10,000, 0, 0.95)."""
    item = layout_settings.get("bootstrap") or {}
    base = BootstrapSettings()
    return BootstrapSettings(int(item.get("resamples", base.resamples)), int(item.get("seed", base.seed)),
                             float(item.get("level", base.level)))


def config_key(run: dict[str, dict]) -> str:
    """What must agree for two runs to differ only in their seed."""
    row = next(iter(run.values()))
    decoding = {k: v for k, v in (row["generation"].get("decoding") or {}).items() if k != "seed"}
    return versions.canonical({"method": [row["method"]["name"], row["method"]["config_hash"],
                                          row["method"].get("version")],
                               "steps": row.get("steps"), "pool": (row.get("pool") or {}).get("sha256"),
                               "prompt": row["generation"].get("prompt_hash"), "decoding": decoding,
                               "sets": sorted(run)})


def choose(runs: Runs, score: Callable[[tuple[str, dict[str, dict]]], tuple[int, float]]) -> list[str]:
    """Run ids of the chosen configuration, best seed first (see module docstring)."""
    groups: dict[str, dict[Any, tuple[str, dict]]] = {}
    for item in sorted(runs.items(), key=score, reverse=True):
        seed = next(iter(item[1].values())).get("seed")
        # Two runs of one seed are not replicas: keep the better one (runs come best first).
        groups.setdefault(config_key(item[1]), {}).setdefault(seed, item)

    def group_score(members: dict[Any, tuple[str, dict]]) -> tuple[int, float]:
        scores = [score(item) for item in members.values()]
        return scores[0][0], float(np.mean([s[1] for s in scores]))

    best = max(groups.values(), key=group_score)
    return [run_id for run_id, _ in best.values()]


def seed_cell(rows: list[dict]) -> dict[str, Any]:
    """Value (%), n, se or std (pp) and seed count of one set's cell from its seed rows."""
    values = [rowlib.primary(r) for r in rows]
    mean, std, k = seed_summary([float(v) for v in values if v is not None])
    metric = rows[0]["metrics"].get(rowlib.primary_metrics(rows[0]["set"]["task"])[0]) or {}
    se = metric.get("stderr") if k == 1 else None
    return {"value": 100.0 * mean, "n": metric.get("n"), "se": None if se is None else 100.0 * se,
            "std": None if std is None else 100.0 * std, "seeds": k}


def seed_vector(rows: list[dict]) -> tuple[str, np.ndarray] | None:
    """(ids hash, per-question mean over the seeds) when every seed row stores outcomes."""
    found = [outcomelib.of_row(r) for r in rows]
    if not found or any(f is None for f in found) or len({f[0] for f in found}) != 1:  # type: ignore[index]
        return None
    return found[0][0], np.mean([f[1] for f in found], axis=0)  # type: ignore[index]


def _pair(mine: Any, other: Any) -> tuple[np.ndarray, np.ndarray] | None:
    if mine is None or other is None or mine[0] != other[0]:
        return None
    return mine[1], other[1]


def interval(line_a, line_b, key: str, macro_sets: list[str], settings: BootstrapSettings) -> Interval | None:
    """Interval (fractions) of line_a - line_b on column `key` ("macro": over macro_sets)."""
    if key == "macro":
        pairs = [_pair(line_a.vectors.get(s), line_b.vectors.get(s)) for s in macro_sets]
        return None if not pairs or any(p is None for p in pairs) else macro_interval(pairs, settings)  # type: ignore
    pair = _pair(line_a.vectors.get(key), line_b.vectors.get(key))
    return None if pair is None else paired_interval(pair[0], pair[1], settings)


def mde(line_a, line_b, key: str, macro_sets: list[str]) -> float | None:
    """MDE (fraction) of line_a - line_b on column `key` from their paired outcomes, or None."""
    if key == "macro":
        pairs = [_pair(line_a.vectors.get(s), line_b.vectors.get(s)) for s in macro_sets]
        return None if not pairs or any(p is None for p in pairs) else macro_mde(pairs)  # type: ignore[arg-type]
    pair = _pair(line_a.vectors.get(key), line_b.vectors.get(key))
    return None if pair is None else paired_mde(pair[0], pair[1])


def _pp(value: float | None) -> float | None:
    return None if value is None else 100.0 * value


def attach(lines: list, keys: list[str], macro_sets: list[str], focus: str | None, raw: str,
           settings: BootstrapSettings) -> None:
    """Intervals and MDEs of the focus line's differences (Cell.ci, Cell.mde) and of every
    line's difference to Raw (Cell.vs_raw, Cell.vs_raw_mde)."""
    raw_line = next((line for line in lines if line.method == raw), None)
    target = next((line for line in lines if line.method == focus), None)
    for key in keys:
        if target is not None and target.cells.get(key) is not None and target.cells[key].diff is not None:
            others = [line for line in lines if line is not target and line.cells.get(key)
                      and line.cells[key].value is not None]
            best = max(others, key=lambda line: line.cells[key].value)
            found = interval(target, best, key, macro_sets, settings)
            target.cells[key].ci = None if found is None else (100 * found.low, 100 * found.high)
            target.cells[key].mde = _pp(mde(target, best, key, macro_sets))
        if raw_line is None or raw_line.cells.get(key) is None or raw_line.cells[key].value is None:
            continue
        for line in lines:
            cell = line.cells.get(key)
            if line is raw_line or cell is None or cell.value is None:
                continue
            found = interval(line, raw_line, key, macro_sets, settings)
            cell.vs_raw = (cell.value - raw_line.cells[key].value,
                           None if found is None else 100 * found.low, None if found is None else 100 * found.high)
            cell.vs_raw_mde = _pp(mde(line, raw_line, key, macro_sets))


def includes_zero(low: float | None, high: float | None) -> bool:
    return low is not None and high is not None and low <= 0.0 <= high


def undecided(diff: float | None, mde_pp: float | None) -> bool:
    """True when the observed difference is smaller than its MDE (cannot decide at this n)."""
    return diff is not None and mde_pp is not None and abs(diff) < mde_pp


def marks(diff: float, low: float | None, high: float | None, mde_pp: float | None = None) -> str:
    """NOISE_MARK when the interval includes 0, UNDECIDED_MARK when |diff| < MDE."""
    return (NOISE_MARK if includes_zero(low, high) else "") + (UNDECIDED_MARK if undecided(diff, mde_pp) else "")


def diff_text(diff: float, low: float | None, high: float | None, with_interval: bool,
              mde_pp: float | None = None) -> str:
    """'+1.20§◇' (interval includes 0; below the MDE), with '[+0.30, +2.10] MDE 2.80' when asked;
    plain when there is no interval."""
    shown = f"{diff:+.2f}{marks(diff, low, high, mde_pp)}"
    if with_interval and low is not None and high is not None:
        shown += f" [{low:+.2f}, {high:+.2f}]"
    if with_interval and mde_pp is not None:
        shown += f" MDE {mde_pp:.2f}"
    return shown


MDE_LEGEND_START = "MDE = minimum detectable difference"


def mde_legend() -> str:
    return (f"{MDE_LEGEND_START} at {MDE_POWER:.0%} power (two-sided alpha {MDE_ALPHA}) for the comparison's n, from "
            "the paired per-question outcomes: (z_0.975 + z_0.80) x sd(per-question differences) / sqrt(n), "
            "macro: the per-set variances combined; when no question differs, sd^2 = 3/n (rule of three) "
            "instead of 0 (leaderboard/tables/stats.py); "
            f"{UNDECIDED_MARK} = the observed difference is smaller than its MDE: cannot decide at this n.")


def legend(settings: BootstrapSettings, any_interval: bool, any_missing: bool) -> list[str]:
    notes = []
    if any_interval:
        notes.append(f"{NOISE_MARK} = the paired bootstrap {settings.level:.0%} interval of the difference includes 0 "
                     f"(not distinguishable from noise); {settings.resamples} resamples of the same questions, seed "
                     f"{settings.seed}, percentile interval (bootstrap v{BOOTSTRAP_VERSION}).")
        notes.append(mde_legend())
    if any_missing:
        notes.append("Differences without an interval: a row lacks per-question outcomes (recorded before they were "
                     "stored, or no samples.jsonl), or the two rows were not scored on the same questions.")
    return notes
