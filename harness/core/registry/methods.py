"""The methods kind of the registry: in-tree folders under methods/ plus the `harness.methods` entry points.

In-tree: every sub-package `factrl.methods.<name>` exposing `METHOD` (a `Method` subclass).
Third party: `[project.entry-points."harness.methods"] name = "package.module:Class"`.
Loading is lazy and failures are kept, not raised, until someone asks for that method, so
one broken plugin never hides the others (core.py).
"""
from __future__ import annotations

import ast
import importlib.util
import pkgutil
from functools import lru_cache
from typing import Any

from .core import KINDS, Entry, _discover, check, entries, get, in_tree, missing, resolve

ENTRY_POINT_GROUP = KINDS["methods"][0]


@in_tree("methods")
def _discover_in_tree() -> dict[str, Entry]:
    # Found by name, not imported: the registry is part of the foundation that methods/ stands on.
    spec = importlib.util.find_spec("factrl.methods")
    found: dict[str, Entry] = {}
    for info in sorted(pkgutil.iter_modules(list(spec.submodule_search_locations or [])) if spec else [],
                       key=lambda m: m.name):
        if info.ispkg and not info.name.startswith("_"):
            found[info.name] = Entry("methods", info.name, "in-tree", f"factrl.methods.{info.name}:METHOD")
    return found


@missing("methods")
def _missing_method(entry: Entry) -> str:
    """What a method's module lacks and the line to add (docs/ADDING_A_METHOD.md)."""
    module_name, _, attr = entry.target.partition(":")
    if entry.origin == "in-tree":
        return (f"methods/{entry.name}/__init__.py defines no METHOD: end it with `METHOD = <its Method subclass>` "
                f"(docs/ADDING_A_METHOD.md)")
    return (f"{module_name} defines no `{attr or 'METHOD'}`, which the entry point names: define it there or point "
            f"the entry point at the Method subclass (docs/ADDING_A_METHOD.md)")


@check("methods")
def _check_method(entry: Entry, cls: Any) -> Any:
    # Resolved by name: the method interface's services (judge, evidence, NLI) check their own
    # names against this registry, so it imports none of them, not even through harness.core.method.
    method = resolve("factrl.harness.core.method:Method")
    if not (isinstance(cls, type) and issubclass(cls, method)):
        raise TypeError(f"{entry.target} is not a factrl.harness.core.method.Method subclass")
    cls.validate()
    if cls.name != entry.name:
        raise ValueError(f"{entry.target} declares name '{cls.name}' but is registered as '{entry.name}'; "
                         "make them equal")
    return cls


def all_methods() -> dict[str, Entry]:
    """Every registered method, loaded (entries that failed carry `.error`)."""
    return entries("methods")


def method_target(name: str) -> str | None:
    """The "module:attr" a method name is registered under (no import), or None."""
    entry = _discover("methods").get(name)
    return entry.target if entry is not None else None


@lru_cache(maxsize=256)
def declared(name: str, attribute: str) -> str | None:
    """The string literal that the class registered as `name` (or a base class of it in the same
    module) assigns to `attribute` (`fidelity`, `label`), read from its source with `ast`, or None.

    Nothing is imported: reading one attribute of every method at publish time must not load
    torch or run plugin code. A method not installed here, or one computing the value, is None.
    """
    target = method_target(name)
    if not target:
        return None
    module_name, _, attr = target.partition(":")
    try:
        spec = importlib.util.find_spec(module_name)
        origin = spec.origin if spec is not None else None
        if not origin or not origin.endswith(".py"):
            return None
        with open(origin, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (ImportError, OSError, SyntaxError, ValueError):
        return None
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    wanted = attr or "METHOD"
    for node in tree.body:  # METHOD = FoRAG
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
                and any(isinstance(t, ast.Name) and t.id == wanted for t in node.targets)):
            wanted = node.value.id
    seen: set[str] = set()
    while wanted in classes and wanted not in seen:
        seen.add(wanted)
        for node in classes[wanted].body:
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign) else [])
            value = getattr(node, "value", None)
            if (any(isinstance(t, ast.Name) and t.id == attribute for t in targets)
                    and isinstance(value, ast.Constant) and isinstance(value.value, str)):
                return value.value
        bases = [b.id for b in classes[wanted].bases if isinstance(b, ast.Name)]
        wanted = next((b for b in bases if b in classes), "")  # a base class of the same module
    return None


def display_label(name: str) -> str:
    """The method's `label` (Method.label) for tables, read without importing it; else `name`."""
    return declared(name, "label") or name


def get_method(name: str) -> Any:
    """The Method class registered as `name`, or a HarnessError listing what is available."""
    return get("methods", name)
