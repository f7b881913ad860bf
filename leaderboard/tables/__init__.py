"""The leaderboard's tables, as data: the table model (model.py), the paper's accuracy, multi-hop
and time tables (paper.py), the further tables and views beside them (ci.py, uncertainty.py,
behaviour.py, factscore.py, floors.py, tricks.py, movement.py, reported.py, stats.py), and build.py,
which builds them all in publishing order; render/ draws them.
"""
from .model import (Cell, Column, Layout, Line, Table, accuracy_tasks, differences, hmm, mark, model_labels,
                    multihop_tasks, pct, subset_notes)
from .paper import accuracy_table, multihop_table, time_table

__all__ = ["Cell", "Column", "Layout", "Line", "Table", "accuracy_tasks", "differences", "hmm", "mark",
           "model_labels", "multihop_tasks", "pct", "subset_notes", "accuracy_table", "multihop_table",
           "time_table"]
