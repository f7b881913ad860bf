"""`harness sets` and `harness names KIND`: what the name registry holds, plugins included."""
from __future__ import annotations

from .builtin import EvalSetInfo
from .core import KINDS, entries


def _print_failures(found: dict) -> int:
    broken = [e for e in found.values() if e.error]
    for entry in broken:
        print(f"{entry.name}  {entry.origin}  FAILED TO LOAD: {entry.error}")
    return 1 if broken else 0


def sets_main(argv: list[str]) -> int:
    """One line per evaluation set (table order): name, label, task, table, Macro, origin."""
    if argv and argv[0] in ("-h", "--help"):
        print("usage: harness sets\n\nList every registered evaluation set (in-tree and plugins, entry-point group "
              "harness.eval_sets) in table order, then the tasks (harness.tasks).\n"
              "Adding one: docs/ADDING_AN_EVAL_SET.md.")
        return 0
    tasks = entries("tasks")
    sets = entries("eval_sets")
    good: list[tuple[EvalSetInfo, str]] = sorted(((e.value, e.origin) for e in sets.values() if not e.error),
                                                 key=lambda item: (item[0].order, item[0].name))
    rows = [("set", "label", "task", "table", "macro", "origin")]
    for info, origin in good:
        task = tasks.get(info.task)
        table = task.value.table if task is not None and task.value is not None else "?"
        rows.append((info.name, info.label, info.task, table, "yes" if info.macro else "-", origin))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print("\ntasks: " + ", ".join(f"{name} ({e.value.table}: {', '.join(e.value.metrics)}; {e.origin})"
                                  for name, e in tasks.items() if not e.error))
    return max(_print_failures(sets), _print_failures(tasks))


def names_main(argv: list[str]) -> int:
    """`harness names KIND`: the names of one kind with origin and target; no KIND lists the kinds."""
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: harness names KIND\n\nkinds (entry-point group):\n"
              + "\n".join(f"  {kind:<11} {group}" for kind, (group, _) in KINDS.items()))
        return 0
    found = entries(argv[0])  # an unknown kind is one line with a suggestion
    width = max((len(n) for n in found), default=4)
    for name, entry in found.items():
        status = f"FAILED TO LOAD: {entry.error}" if entry.error else entry.target
        print(f"{name:<{width}}  {entry.origin}  {status}")
    return 1 if any(e.error for e in found.values()) else 0
