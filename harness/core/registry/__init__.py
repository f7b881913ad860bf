"""The name registry (docs/CONTRACTS.md, "Names and groups"): every name a config, a layout or a
table may use, by kind. core.py: lookup and loading; builtin.py: the in-tree entries as data;
methods.py: the methods kind (folders under methods/, `Method` classes)."""
from __future__ import annotations

from .builtin import EvalSetInfo, TaskInfo, eval_set, macro_sets, set_task, sets_in_order, tasks_of_table
from .core import KINDS, Entry, entries, entry, get, names, refresh, require, resolve
from .methods import ENTRY_POINT_GROUP, all_methods, declared, display_label, get_method, method_target


__all__ = ["ENTRY_POINT_GROUP", "KINDS", "Entry", "EvalSetInfo", "TaskInfo", "all_methods", "declared",
           "display_label", "entries", "entry", "eval_set", "get", "get_method", "macro_sets", "method_target",
           "names", "refresh", "require", "resolve", "set_task", "sets_in_order", "tasks_of_table"]
