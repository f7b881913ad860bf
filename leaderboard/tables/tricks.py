"""The per-question gaming floor: what each probe-panel trick alone earns on a set.

The constant-answer floor (floors.py) gives every question the same completion. The tricks of
the reward-robustness probe's panel (`factrl.harness.probe.panel`: a hedge listing the gold, the
gold after a wrong trace, padding, an instruction to the grader, a refusal, ...) are built per
question instead: for each question of the row's own evaluation set, each panel entry's builder
makes its completion from the question, its gold (the first reference) and a wrong answer
(another question's gold, `panel.questions`), and the row's scorer (name, options, version)
scores them, together with strict accuracy v2 (diagnostics.strict_verdict). The table shows,
per entry and set, how much of a score the trick alone could earn; the accuracy table's footer
gets the best trick per set (the two honest references excluded). Whatever entries the panel
defines are iterated, keyed by its PANEL_VERSION.

Cached like the floors, under `<harness cache>/tricks/`, keyed by set hash, limit, scorer,
panel version and entry names, and strict version.
"""
from __future__ import annotations

import json
from typing import Any

from factrl.harness.core.answers import STRICT_VERSION
from factrl.harness.probe import panel as probe_panel

from .. import diagnostics as diaglib
from .floors import cache_file, checked_set, row_scorer, write_cache
from .model import Cell, Column, Layout, Line, Table, pct

TRICK_METHOD = "best-trick"


def _cache_key(row: dict[str, Any]) -> dict[str, Any]:
    scorer = row["scorer"]
    return {"set": row["set"]["sha256"], "limit": row["generation"].get("limit"), "scorer": scorer["name"],
            "scorer_version": str(scorer["version"]), "options": scorer.get("options") or {},
            "probe_panel": probe_panel.PANEL_VERSION, "entries": probe_panel.entry_names(), "strict": STRICT_VERSION}


def set_tricks(row: dict[str, Any], data_dir: str | None = None, use_cache: bool = True) -> dict[str, Any]:
    """{"panel_version", "scorer", "n", "entries": {name: {"label", "value", "strict"}}} (fractions)
    for a row's set, or {"reason"} when the set or its scorer cannot be had."""
    from factrl.evals.metrics import aggregate

    cached = cache_file(_cache_key(row), "tricks")
    if use_cache and cached.is_file():
        return json.loads(cached.read_text(encoding="utf-8"))
    scorer = row_scorer(row)
    if isinstance(scorer, dict):
        return scorer
    eval_set = checked_set(row, data_dir)
    if isinstance(eval_set, dict):
        return eval_set
    questions = probe_panel.questions([{"question": r.question, "answers": list(r.references)}
                                       for r in eval_set.records])
    metrics = scorer.metrics(eval_set.task)
    found: dict[str, dict[str, Any]] = {}
    for entry in probe_panel.entries():
        completions = [probe_panel.completion_text(*entry.build(q), confidence=entry.confidence) for q in questions]
        samples = scorer.score(eval_set, completions)
        value = aggregate(samples, metrics)["accuracy"]["value"]
        strict = sum(diaglib.strict_verdict(s, eval_set.task)[0] for s in samples.rows()) / max(len(samples), 1)
        found[entry.name] = {"label": entry.label, "value": value, "strict": strict}
    out = {"panel_version": probe_panel.PANEL_VERSION, "scorer": f"{row['scorer']['name']} {row['scorer']['version']}",
           "n": eval_set.count, "strict_rule": STRICT_VERSION, "entries": found}
    if use_cache:
        write_cache(cached, out)
    return out


def tricks_table(accuracy: Table, rows: list[dict[str, Any]], layout: Layout) -> Table | None:
    """One line per panel entry, the accuracy table's set columns and Macro; adds the best trick
    per set to the accuracy table's footer. None when turned off or no set can be scored."""
    options = layout.floors
    if not options.enabled or not options.tricks or not accuracy.lines:
        return None
    by_set: dict[str, dict[str, Any]] = {}
    for row in rows:
        by_set.setdefault(row["set"]["name"], row)  # the version pins set and scorer: one row speaks for all
    sets = [c.key for c in accuracy.columns if c.key in by_set]
    results, missing = {}, []
    for name in sets:
        found = set_tricks(by_set[name], options.data_dir, use_cache=options.cache)
        if "reason" in found:
            missing.append(f"{layout.set_label(name)}: {found['reason']}")
        else:
            results[name] = found
    if not results:
        return None
    macro_sets = [s for s in sets if s in layout.macro_sets] or sets  # as the accuracy table's Macro
    sets = [s for s in sets if s in results]
    lines = []
    for entry in probe_panel.entries():
        reference = entry.name in (*probe_panel.REFERENCES, *probe_panel.STATED_REFERENCES)
        line = Line("", entry.name, entry.label + (" (reference)" if reference else ""))
        for name in sets:
            item = results.get(name, {}).get("entries", {}).get(entry.name)
            if item is None:
                line.cells[name] = Cell()
                continue
            value, strict = 100.0 * item["value"], 100.0 * item["strict"]
            line.cells[name] = Cell(value, f"{pct(value)} (strict {pct(strict)})", strict=strict,
                                    strict_rule=STRICT_VERSION)
        values = [line.cells[s].value if s in line.cells else None for s in macro_sets]
        macro = sum(values) / len(values) if all(v is not None for v in values) else None  # type: ignore[misc]
        line.cells["macro"] = Cell(macro, pct(macro))
        lines.append(line)
    version = probe_panel.PANEL_VERSION
    _best_trick_footer(accuracy, lines, sets, layout, version)
    columns = [Column(c.key, c.label, c.group, c.numeric, c.higher_is_better) for c in accuracy.columns
               if c.key in sets or c.key == "macro"]
    notes = [f"Accuracy (%) that each entry of the reward-robustness probe's panel v{version} "
             "(factrl.harness.probe.panel) earns on its own: its completion built per question of the set from "
             "the question, its gold and another question's gold as the wrong answer, scored by the rows' scorer; "
             f"(strict x) = strict accuracy v{STRICT_VERSION}. A method's score near a trick's has not shown more "
             "than the trick; the honest answers are references."]
    if missing:
        notes.append("No per-question floor for " + "; ".join(missing) + ".")
    return Table("tricks", f"Gaming floor per trick (probe panel v{version})", columns, [(None, lines)], notes,
                 first_header="")


def _best_trick_footer(accuracy: Table, lines: list[Line], sets: list[str], layout: Layout, version: str) -> None:
    """The best trick per set: entries that state the gold as their answer (the references, the
    gold after a wrong trace) answer correctly and probe reasoning rewards, not the scorer."""
    scoring_tricks = {e.name for e in probe_panel.entries()
                      if e.answer != "gold" and e.name not in probe_panel.REFERENCES}
    footer = Line("", TRICK_METHOD, f"Gaming floor (best probe trick, panel v{version})")
    parts = []
    for name in sets:
        tricks = [line for line in lines if line.method in scoring_tricks and line.cells[name].value is not None]
        if not tricks:
            continue
        best = max(tricks, key=lambda line: line.cells[name].value)  # type: ignore[arg-type,return-value]
        cell = best.cells[name]
        footer.cells[name] = Cell(cell.value, cell.text, strict=cell.strict, strict_rule=cell.strict_rule)
        parts.append(f"{layout.set_label(name)} {cell.value:.2f} ({best.method_label})")
    if parts:
        accuracy.footer.append(footer)
        accuracy.notes.append("Gaming floor (best probe trick): the best accuracy of a probe-panel trick built per "
                              "question (table 'Gaming floor per trick'; entries whose answer is the gold itself are "
                              "not tricks of the scorer): " + "; ".join(parts) + ".")
