"""Every leaderboard table, in publishing order: the step above the table model (tables/model.py).

The variants (the gaming floor, the probe's tricks, the FActScore table) build on the table
model's pieces, so the function that runs them all lives here, above them all, and the table
model never imports its own variants.
"""
from __future__ import annotations

from .. import components as componentlib
from .model import Layout, Table, accuracy_tasks
from .paper import accuracy_table, multihop_table, time_table
from .factscore import factscore_table, mark_judged
from .floors import add_floor  # scores the constant-answer panel on each set (cached)
from .movement import mark_lines as mark_movement
from .tricks import tricks_table  # and the probe panel's tricks, per question (cached)


def build_tables(rows: list[dict], layout: Layout) -> list[Table]:
    """All tables that have data, in publishing order; lines with stand-ins are marked."""
    accuracy = accuracy_table(rows, layout)
    tables = [accuracy] if accuracy.lines else []
    tricks = None
    if accuracy.lines:
        tasks = accuracy_tasks()
        add_floor(accuracy, [r for r in rows if r["set"]["task"] in tasks], layout)
        tricks = tricks_table(accuracy, [r for r in rows if r["set"]["task"] in tasks], layout)
    timed = time_table(accuracy, rows, layout)
    if timed is not None:
        tables.append(timed)
    multihop = multihop_table(rows, layout)
    if multihop.lines:
        tables.append(multihop)
    factscore = factscore_table(rows, layout)
    if factscore.lines:
        tables.append(factscore)
    if tricks is not None:
        tables.append(tricks)
    by_id = {row["row_id"]: row for row in rows}
    if accuracy.lines:  # "did not move" (movement.py)
        accuracy.notes += mark_movement(accuracy, by_id, layout.raw)
    for table in tables:
        componentlib.mark_table(table, by_id)
    if factscore.lines:
        mark_judged(factscore, by_id)
    return tables
