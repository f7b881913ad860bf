"""The FActScore-NPM table (the CorVer paper's layout): per model, one line per method, the
counts F (facts), S (supported), A (covered responses), N (responses) and the four quantities
S/F (micro precision, %), S/N, A/N (%), F/N, from the `factscore_*` metrics of a set's rows.

A line uses the row with the most responses (then the latest evaluation). Stand-in components of
the evaluation itself (the masked LM, the judge that extracted the claims, the evidence store;
recorded in the row's `judged.factscore.components`) mark the line like a training stand-in.
"""
from __future__ import annotations

from typing import Any

from ..components import MARKER
from ..store.versions import model_key
from .model import Cell, Column, Layout, Line, Table, mark, model_labels, pct

COUNTS = (("facts", "F"), ("supported", "S"), ("covered", "A"), ("responses", "N"))
RATIOS = (("precision", "S/F (%)", 100.0), ("supported_per_response", "S/N", 1.0),
          ("coverage", "A/N (%)", 100.0), ("facts_per_response", "F/N", 1.0))


def _value(row: dict, key: str) -> float | None:
    item = row["metrics"].get(f"factscore_{key}")
    return None if item is None else float(item["value"])


def judged_stand_ins(row: dict) -> list[tuple[str, str]]:
    """[(label, note)] of the stand-in components behind a row's FActScore numbers."""
    components = (((row.get("judged") or {}).get("factscore") or {}).get("components") or {})
    return [(str(c.get("label") or name), str(c.get("note") or "")) for name, c in sorted(components.items())
            if isinstance(c, dict) and c.get("stand_in") is True]


def unpinned_components(row: dict) -> list[str]:
    """"label@commit" of the row's FActScore components loaded without a pinned revision."""
    components = (((row.get("judged") or {}).get("factscore") or {}).get("components") or {})
    # A component that records revision_pinned records its revision too (None: no commit resolved).
    return [f"{c.get('label') or name}@{str(c['revision'] or '?')[:12]}" for name, c in sorted(components.items())
            if isinstance(c, dict) and c.get("revision_pinned") is False]


def factscore_table(rows: list[dict], layout: Layout) -> Table:
    scored = [r for r in rows if "factscore_precision" in r["metrics"]]
    sets = layout.sort_sets(r["set"]["name"] for r in scored)
    labels = model_labels(scored)
    columns = [Column(key, label, numeric=True) for key, label in COUNTS]
    columns += [Column(key, label) for key, label, _ in RATIOS]
    chosen: dict[tuple[str, str, str], dict] = {}
    for row in scored:
        key = (model_key(row["model"]), row["set"]["name"], row["method"]["name"])
        best = chosen.get(key)
        rank = (_value(row, "responses") or 0, str(row.get("evaluated") or ""))
        if best is None or rank > (_value(best, "responses") or 0, str(best.get("evaluated") or "")):
            chosen[key] = row
    groups: list[tuple[str | None, list[Line]]] = []
    for mkey in sorted({k[0] for k in chosen}):
        for name in sets:
            methods = layout.sort_methods(m for (k, s, m) in chosen if k == mkey and s == name)
            lines = []
            for method in methods:
                row = chosen[(mkey, name, method)]
                line = Line(labels[mkey], method, layout.method_label(method), run_ids=[row["run"]["run_id"]])
                for key, _ in COUNTS:
                    value = _value(row, key)
                    line.cells[key] = Cell(value, "—" if value is None else f"{int(value):,}",
                                           row_ids=[row["row_id"]])
                for key, _, scale in RATIOS:
                    value = _value(row, key)
                    value = None if value is None else scale * value
                    line.cells[key] = Cell(value, pct(value), row_ids=[row["row_id"]])
                lines.append(line)
            for key in ("precision", "supported_per_response", "coverage"):  # more facts per response is not better
                mark(lines, key)
            group = labels[mkey] + (f" / {layout.set_label(name)}" if len(sets) > 1 else "")
            groups.append((group, lines))
    notes = ["FActScore-NPM (FTS5 article, FActScore BM25 passages) on the reasoning: F facts, "
             "S supported (NPM > 0.3), "
             "A responses with at least one fact, N responses; S/F is the micro precision (not FActScore's "
             "per-response mean)."] if groups else []
    return Table("factscore", "FActScore-NPM on reasoning traces", columns, groups, notes)


def mark_judged(table: Table, rows_by_id: dict[str, dict[str, Any]]) -> None:
    """Add the evaluation's own stand-ins to the lines (after components.mark_table) and the legend."""
    users: dict[tuple[str, str], list[str]] = {}
    for line in table.lines:
        for rid in line.row_ids:
            for item in judged_stand_ins(rows_by_id.get(rid, {})):
                if item[0] not in line.stand_ins:
                    line.stand_ins = sorted([*line.stand_ins, item[0]])
                users.setdefault(item, [])
                who = f"{line.model} / {line.method_label}"
                if who not in users[item]:
                    users[item].append(who)
    unpinned = sorted({f"{item} ({line.model} / {line.method_label})" for line in table.lines
                       for rid in line.row_ids for item in unpinned_components(rows_by_id.get(rid, {}))})
    if unpinned:
        table.notes.append("Scored with a hub model whose revision was not pinned (the commit that loaded is "
                           "recorded): " + "; ".join(unpinned) + ".")
    if users:
        parts = [label + (f" ({note})" if note else "") + f", used by {', '.join(who)}"
                 for (label, note), who in sorted(users.items())]
        table.notes.append(f"{MARKER} = scored with a stand-in evaluation component: " + "; ".join(parts) + ".")
