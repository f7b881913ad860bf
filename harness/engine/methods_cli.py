"""`harness methods`: one line per registered method (the registry itself: harness/core/registry/)."""
from __future__ import annotations

from ..core.method import INTERFACE_VERSION
from ..core.registry import all_methods


def methods_main(argv: list[str]) -> int:
    """`harness methods`: one line per method with algorithm, origin and description."""
    if argv and argv[0] in ("-h", "--help"):
        print("usage: harness methods\n\nList every registered reward method (in-tree and plugins) and the "
              "method interface version plugins are written against.")
        return 0
    entries = all_methods()
    print(f"method interface version {INTERFACE_VERSION} (factrl.harness.core.method.INTERFACE_VERSION)")
    width = max((len(n) for n in entries), default=4)
    origin = max((len(e.origin) for e in entries.values()), default=7)  # "plugin factrl-nover" is wider than "in-tree"
    broken = 0
    for name, entry in entries.items():
        if entry.error:
            broken += 1
            print(f"{name:<{width}}  {'?':<4}  {entry.origin:<{origin}}  FAILED TO LOAD: {entry.error}")
        else:
            assert entry.method is not None
            print(f"{name:<{width}}  {entry.method.algorithm:<4}  {entry.origin:<{origin}}  {entry.method.description}")
    return 1 if broken else 0
