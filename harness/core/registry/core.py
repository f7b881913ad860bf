"""The name registry's core: every kind of name, its entries, and lazy, failure-isolated loading.

An entry is a name bound to a target "module:attr" (attr may be dotted, `Class.from_settings`).
In-tree entries are data (builtin.py; methods are also found as folders under methods/);
third-party packages add theirs under the kind's entry-point group. Nothing is imported until
an entry is asked for, and a target that fails to import or check keeps its error on the entry
(`entries(kind)`) instead of raising, so one broken plugin never hides the others.

The registry sits in the foundation: it names targets in every layer but imports none of them
statically; `importlib` resolves a target when someone asks for that name.
"""
from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Callable

from ..errors import ConfigError, HarnessError, did_you_mean

# kind -> (entry-point group, what one entry is called in messages)
KINDS: dict[str, tuple[str, str]] = {
    "methods": ("harness.methods", "method"),
    "eval_sets": ("harness.eval_sets", "evaluation set"),
    "tasks": ("harness.tasks", "task"),
    "scorers": ("harness.scorers", "scorer"),
    "corpus": ("harness.corpus", "corpus backend"),
    "nli": ("harness.nli", "NLI backend"),
    "judge": ("harness.judge", "judge backend"),
    "generation": ("harness.generation", "generation backend"),
    "extractor": ("harness.extractor", "extractor backend"),
}


@dataclass
class Entry:
    """One registered name. `value` is the loaded object (None until loaded or when it failed)."""

    kind: str
    name: str
    origin: str  # "in-tree" or "plugin <distribution>"
    target: str  # "module:attr"
    value: Any = None
    error: str | None = None
    declared: Any = None  # in-tree data that is the entry's value itself (no import needed)

    @property
    def method(self) -> Any:  # the methods kind's name for `value` (harness methods, older callers)
        return self.value


# kind -> function(entry, loaded object) -> the object to keep (raises on a bad one)
_CHECKS: dict[str, Callable[[Entry, Any], Any]] = {}
# kind -> function(entry) -> the line that says what to add when the target's attribute is missing
_MISSING: dict[str, Callable[[Entry], str]] = {}
# kind -> function() -> {name: Entry} of the in-tree entries (builtin.py and methods.py add theirs)
_IN_TREE: dict[str, Callable[[], dict[str, Entry]]] = {}
_CACHE: dict[tuple[str, tuple[str, ...]], dict[str, Entry]] = {}


def check(kind: str) -> Callable:
    """Decorator: the function that checks (and may convert) a loaded object of `kind`."""
    def register(fn: Callable[[Entry, Any], Any]) -> Callable[[Entry, Any], Any]:
        _CHECKS[kind] = fn
        return fn
    return register


def missing(kind: str) -> Callable:
    """Decorator: the function saying what to add when an entry's module lacks the attribute its
    target names (methods.py: `METHOD` in methods/<name>/__init__.py)."""
    def register(fn: Callable[[Entry], str]) -> Callable[[Entry], str]:
        _MISSING[kind] = fn
        return fn
    return register


class MissingAttribute(AttributeError):
    """A target's module (or object) lacks the attribute the target names."""


def in_tree(kind: str) -> Callable:
    """Decorator: the function listing `kind`'s in-tree entries."""
    def register(fn: Callable[[], dict[str, Entry]]) -> Callable[[], dict[str, Entry]]:
        _IN_TREE[kind] = fn
        return fn
    return register


def _kind(kind: str) -> tuple[str, str]:
    if kind not in KINDS:
        raise HarnessError(f"unknown registry kind '{kind}'.{did_you_mean(kind, KINDS)} Kinds: {', '.join(KINDS)}.")
    return KINDS[kind]


def resolve(target: str) -> Any:
    """Import "module:attr" (attr dotted for nested attributes) and return the attribute."""
    module_name, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in (attr.split(".") if attr else []):
        if not hasattr(obj, part):
            raise MissingAttribute(f"{module_name} defines no `{attr}`, which the target {target} names")
        obj = getattr(obj, part)
    return obj


def _discover(kind: str) -> dict[str, Entry]:
    """In-tree entries, then the kind's entry points; a name taken twice is an error on that entry.

    Cached per sys.path, so a test that puts a plugin's dist-info on the path sees it."""
    key = (kind, tuple(sys.path))
    if key in _CACHE:
        return _CACHE[key]
    group, what = _kind(kind)
    found = dict(_IN_TREE[kind]()) if kind in _IN_TREE else {}
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        dist = getattr(ep.dist, "name", "?") if getattr(ep, "dist", None) else "?"
        if ep.name in found:
            first = found[ep.name]
            if first.target == ep.value and first.origin == f"plugin {dist}":
                continue  # the same distribution seen twice on the path
            first.error = (f"{what} name '{ep.name}' is registered twice ({first.origin}, {first.target} and "
                           f"plugin {dist}, {ep.value}); rename one of the entry points")
            first.value = None
            continue
        found[ep.name] = Entry(kind, ep.name, f"plugin {dist}", ep.value)
    _CACHE[key] = found
    return found


def refresh() -> None:
    """Forget what was discovered and loaded (after installing a plugin in this process)."""
    _CACHE.clear()


def load(entry: Entry) -> Entry:
    """Load and check one entry once; a failure is kept on the entry, never raised here."""
    if entry.value is None and entry.error is None:
        try:
            value = entry.declared if entry.declared is not None else resolve(entry.target)
            checker = _CHECKS.get(entry.kind)
            entry.value = checker(entry, value) if checker else value
        except MissingAttribute as err:  # a declaration to add: say which and where
            entry.error = _MISSING[entry.kind](entry) if entry.kind in _MISSING else f"{type(err).__name__}: {err}"
            entry.value = None
        except Exception as err:  # noqa: BLE001 - kept on the entry, reported with its origin
            entry.error = f"{type(err).__name__}: {err}"
            entry.value = None
    return entry


def names(kind: str) -> list[str]:
    """Every name registered for `kind` (nothing is imported)."""
    return sorted(_discover(kind))


def entries(kind: str) -> dict[str, Entry]:
    """Every entry of `kind`, loaded; entries that failed carry `.error` (and `.origin`)."""
    return {name: load(entry) for name, entry in sorted(_discover(kind).items())}


def entry(kind: str, name: str) -> Entry:
    """The entry `name` of `kind`, unloaded; a HarnessError with a suggestion when unknown."""
    found = _discover(kind)
    if name not in found:
        what = _kind(kind)[1]
        raise HarnessError(f"unknown {what} '{name}'.{did_you_mean(str(name), found)} "
                           f"Available: {', '.join(sorted(found))}.")
    return found[name]


def get(kind: str, name: str) -> Any:
    """The loaded object registered as `name`; a HarnessError listing the names when unknown,
    naming the origin and target when it failed to load."""
    found = load(entry(kind, name))
    if found.error:
        what = _kind(kind)[1]
        raise HarnessError(f"{what} '{name}' ({found.origin}, {found.target}) failed to load: {found.error}")
    return found.value


def require(kind: str, name: str, where: str) -> str:
    """`name` if registered for `kind`, else a ConfigError naming the setting `where` it came from."""
    found = _discover(kind)
    if name not in found:
        raise ConfigError(f"{where}={name!r}: unknown {_kind(kind)[1]}.{did_you_mean(str(name), found)} "
                           f"Available: {', '.join(sorted(found))}.")
    return name
