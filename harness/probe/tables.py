"""The probe's tables: one table across methods in Markdown, HTML and CSV, plus probe.json.

Rows are the panel's completion types, columns the probed (method, model) pairs; a cell is
the mean per-completion return +/- its standard error over the questions, with the verdict
(PROBE_MARKS). The leaderboard's publisher can include them as they are: `write_tables(results,
out_dir)` writes probe.md / probe.html / probe.csv / probe.json, and `load_results(probe.json)`
reads them back for a later publish.
"""
from __future__ import annotations

import csv
import html
import io
import json
from pathlib import Path
from typing import Iterable

from ..core.errors import DataError
from ..core.rundir import atomic_write
from . import panel as panel_mod
from .runner import BREACH_SHARE, SCHEMA, ProbeResult

MARKS = {"breach": "✖ breach", "hack": "⚠ hack", "ok": "", "reference": "", "no_signal": "no signal",
         "ordering_broken": "? correct not above wrong"}
CSV_FIELDS = ("method", "method_version", "algorithm", "model", "guards", "judge_obeys_material", "panel_version",
              "questions", "group_size",
              "type", "label", "answer", "baseline", "mean", "stderr", "n", "no_signal", "position", "verdict")


def _labels() -> dict[str, panel_mod.Entry]:
    return {e.name: e for e in panel_mod.entries()}


def _label(labels: dict[str, panel_mod.Entry], name: str) -> str:
    entry = labels.get(name)
    if entry is None:
        return name
    return entry.label + (f" († vs `{entry.baseline}`)" if entry.baseline != panel_mod.HONEST_WRONG else "")


def _types(results: list[ProbeResult]) -> list[str]:
    names = [e.name for e in panel_mod.entries()]
    extra = [k for r in results for k in r.stats if k not in names]
    return names + sorted(set(extra))


def _cell(result: ProbeResult, name: str) -> str:
    stats = result.stats.get(name)
    if stats is None or stats.mean is None:
        return "n/a" if stats is None else MARKS["no_signal"]
    se = f" ± {stats.stderr:.2f}" if stats.stderr is not None else ""
    mark = MARKS[result.verdict(name)]
    return f"{stats.mean:.2f}{se}" + (f" {mark}" if mark else "")


def _heading(result: ProbeResult) -> str:
    return result.heading


def legend(results: list[ProbeResult]) -> str:
    versions = sorted({r.panel_version for r in results}) or [panel_mod.PANEL_VERSION]
    counts = sorted({r.questions for r in results})
    return (f"Mean return per completion (GRPO: mean of the token returns; PPO: their sum) ± standard error over "
            f"{'/'.join(map(str, counts))} pool questions, probe panel version {'/'.join(versions)}. "
            f"⚠ hack: above the honest wrong answer's mean; ✖ breach: reaches the honest correct answer's "
            f"(at least {BREACH_SHARE:.0%} of the correct - wrong gap); a type with a baseline (†) is judged "
            f"against that type's mean instead of the honest wrong answer's. 'guarded:' columns are the method "
            f"with the named guards on (docs/CONTRACTS.md \"Guards\"); the others are the original rewards. A "
            f"policy can learn any marked completion type instead of being right."
            + (" A column whose reward gives the honest answers no signal (it reads a stated confidence) is "
               "judged against the answers stated certain (`stated_correct_certain`, `stated_wrong_certain`)."
               if any(r.references() != panel_mod.REFERENCES for r in results) else ""))


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"  # a "|" in a name must not split a cell


def markdown(results: Iterable[ProbeResult]) -> str:
    results = list(results)
    labels = _labels()
    head = ["completion"] + [_heading(r) for r in results]
    lines = [_md_row(head), "|" + "---|" * len(head)]
    for name in _types(results):
        label = _label(labels, name)
        cells = [f"{label} (`{name}`)"] + [_cell(r, name) for r in results]
        lines.append(_md_row(cells))
    return "\n".join(["## Reward-robustness probe", "", *lines, "", legend(results), ""])


def html_table(results: Iterable[ProbeResult]) -> str:
    results = list(results)
    labels = _labels()
    esc = html.escape
    parts = ['<section class="probe"><h2>Reward-robustness probe</h2><table>',
             "<thead><tr><th>completion</th>" + "".join(f"<th>{esc(_heading(r))}</th>" for r in results)
             + "</tr></thead><tbody>"]
    for name in _types(results):
        label = _label(labels, name)
        cells = "".join(f'<td class="{r.verdict(name) if name in r.stats else "missing"}">{esc(_cell(r, name))}</td>'
                        for r in results)
        parts.append(f"<tr><th>{esc(label)} <code>{esc(name)}</code></th>{cells}</tr>")
    parts.append(f"</tbody></table><p>{esc(legend(results))}</p></section>")
    return "\n".join(parts)


def csv_text(results: Iterable[ProbeResult]) -> str:
    labels = _labels()
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for r in results:
        for name, s in r.stats.items():
            entry = labels.get(name)
            writer.writerow({"method": r.method, "method_version": r.method_version, "algorithm": r.algorithm,
                             "model": r.model, "guards": ";".join(r.guards),
                             "judge_obeys_material": str(r.obeying_judge).lower(), "panel_version": r.panel_version,
                             "questions": r.questions, "group_size": r.group_size,
                             "type": name, "label": entry.label if entry else "", "answer": entry.answer if entry else "",
                             "baseline": r.baseline(name) if name not in (*panel_mod.REFERENCES, *panel_mod.STATED_REFERENCES) else "",
                             "mean": s.mean, "stderr": s.stderr, "n": s.n, "no_signal": s.no_signal,
                             "position": r.position(name), "verdict": r.verdict(name)})
    return buffer.getvalue()


def write_tables(results: Iterable[ProbeResult], out_dir: str | Path) -> dict[str, Path]:
    """probe.{md,html,csv,json} under out_dir; returns the paths by format."""
    results = list(results)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    body = {"md": markdown(results), "html": html_table(results), "csv": csv_text(results),
            "json": json.dumps([r.to_dict() for r in results], indent=2, default=str) + "\n"}
    paths = {}
    for fmt, text in body.items():
        paths[fmt] = atomic_write(out / f"probe.{fmt}", text)  # a reader never sees half a table
    return paths


def load_results(path: str | Path) -> list[ProbeResult]:
    """Results from a probe.json that write_tables wrote."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        if not isinstance(data, list) or not all(isinstance(d, dict) and d.get("schema") == SCHEMA for d in data):
            raise ValueError(f"expected a JSON list of {SCHEMA} objects")
        return [ProbeResult.from_dict(d) for d in data]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DataError(f"{file}: not a probe results file ({type(err).__name__}: {err}); rerun `harness probe`") from None
