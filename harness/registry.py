"""The method registry: in-tree folders under methods/ plus the `harness.methods` entry points.

In-tree: every sub-package `factrl.methods.<name>` exposing `METHOD` (a `Method` subclass).
Third party: `[project.entry-points."harness.methods"] name = "package.module:Class"`.
Loading is lazy and failures are kept, not raised, until someone asks for that method, so
one broken plugin never hides the others.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points

from .errors import HarnessError, did_you_mean
from .method import Method

ENTRY_POINT_GROUP = "harness.methods"


@dataclass
class Entry:
    name: str
    origin: str  # "in-tree" or "plugin <distribution>"
    target: str  # "module:attr"
    method: type[Method] | None = None
    error: str | None = None


def _load_target(target: str) -> type[Method]:
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    if not hasattr(module, attr or "METHOD"):
        raise HarnessError(_missing_attribute(module_name, attr))
    cls = getattr(module, attr or "METHOD")
    if not (isinstance(cls, type) and issubclass(cls, Method)):
        raise TypeError(f"{target} is not a factrl.harness.method.Method subclass")
    cls.validate()
    return cls


def _missing_attribute(module_name: str, attr: str) -> str:
    """What a registered module lacks, and the fix (docs/ADDING_A_METHOD.md)."""
    if module_name.startswith("factrl.methods.") and attr == "METHOD":
        folder = module_name.removeprefix("factrl.").replace(".", "/")
        return (f"{folder}/__init__.py defines no METHOD: end it with `METHOD = <its Method subclass>` "
                f"(docs/ADDING_A_METHOD.md)")
    return (f"{module_name} defines no `{attr or 'METHOD'}`, which the entry point names: define it there or "
            f"point the entry point at the Method subclass (docs/ADDING_A_METHOD.md)")


def _discover() -> dict[str, Entry]:
    found: dict[str, Entry] = {}
    import factrl.methods as in_tree

    for info in sorted(pkgutil.iter_modules(in_tree.__path__), key=lambda m: m.name):
        if not info.ispkg or info.name.startswith("_"):
            continue
        found[info.name] = Entry(info.name, "in-tree", f"factrl.methods.{info.name}:METHOD")
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep.dist, "name", "?") if getattr(ep, "dist", None) else "?"
        if ep.name in found:
            found[ep.name].error = (
                f"method name '{ep.name}' is registered twice ({found[ep.name].origin} and plugin {dist}); "
                f"rename the plugin's entry point"
            )
            continue
        found[ep.name] = Entry(ep.name, f"plugin {dist}", ep.value)
    return found


def _load(entry: Entry) -> Entry:
    if entry.method is None and entry.error is None:
        try:
            entry.method = _load_target(entry.target)
            if entry.method.name != entry.name:
                entry.error = (f"{entry.target} declares name '{entry.method.name}' but is registered as "
                               f"'{entry.name}'; make them equal")
                entry.method = None
        except HarnessError as err:  # a declaration problem with its fix
            entry.error = str(err)
        except Exception as err:  # noqa: BLE001 - reported to the user with the plugin's name
            entry.error = f"{type(err).__name__}: {err}"
    return entry


def all_methods() -> dict[str, Entry]:
    """Every registered method, loaded (entries that failed carry `.error`)."""
    return {name: _load(entry) for name, entry in _discover().items()}


def method_target(name: str) -> str | None:
    """The "module:attr" a method name is registered under (no import), or None."""
    entry = _discover().get(name)
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


def get_method(name: str) -> type[Method]:
    """The Method class registered as `name`, or a HarnessError listing what is available."""
    entries = _discover()
    if name not in entries:
        raise HarnessError(f"unknown method '{name}'.{did_you_mean(name, entries)} "
                           f"Available: {', '.join(sorted(entries))}.")
    entry = _load(entries[name])
    if entry.error:
        raise HarnessError(f"method '{name}' ({entry.origin}, {entry.target}) failed to load: {entry.error}")
    assert entry.method is not None
    return entry.method
