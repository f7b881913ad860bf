"""Static import graph of the `factrl` packages, for the no-cycles test.

The graph is read from the source files with `ast` (nothing is imported, so a module's import
side effects cannot hide or add an edge). Every `import`/`from ... import` statement counts,
wherever it sits: at module level, inside a function, or under `if TYPE_CHECKING:`. A lazy
import inside a function still ties the two modules together at run time, so it is an edge
like any other; the only exception is the allow-list the test keeps, each entry with its reason.
Not seen: imports by computed name (`importlib.import_module`), which the project uses only
for tables of names resolved on demand (the `harness` command table, the leaderboard's lazy
public face, plugin entry points); each of those points down from a face to its parts, except the
name registry (harness/core/registry/), which sits in the foundation so that every layer can check a
name against it, and names its in-tree entries in every layer as "module:attr" data.

Names are mapped the way setup.py installs them: `harness/x.py` is `factrl.harness.x`,
`plugins/nover/factrl_nover/x.py` is `factrl_nover.x` (and so for every plugin under plugins/). Relative imports are resolved against the
importing module's package. `from pkg import name` is an edge to `pkg.name` when that is a
module, else to `pkg` itself (its `__init__`).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"harness": "factrl.harness", "evals": "factrl.evals", "methods": "factrl.methods",
            "leaderboard": "factrl.leaderboard", "plugins/nover/factrl_nover": "factrl_nover",
            "plugins/truthrl/factrl_truthrl": "factrl_truthrl", "plugins/binary_rar/factrl_binary_rar": "factrl_binary_rar",
            "plugins/rlcr/factrl_rlcr": "factrl_rlcr"}


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Map every module name in the product packages to its file."""
    out: dict[str, Path] = {}
    for folder, package in PACKAGES.items():
        base = root / folder
        for path in sorted(base.rglob("*.py")):
            parts = path.relative_to(base).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join((package, *parts))] = path
    return out


def _is_package(name: str, files: dict[str, Path]) -> bool:
    path = files.get(name)
    return path is not None and path.name == "__init__.py"


def _resolve(node: ast.AST, name: str, files: dict[str, Path]) -> list[str]:
    """The in-tree modules one import statement of module `name` reaches."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
        return [_known(t, files) for t in targets if _known(t, files)]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        package = name if _is_package(name, files) else name.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{node.module}" if node.module else package
    else:
        base = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        if sub in files:
            out.append(sub)
        elif _known(base, files):
            out.append(_known(base, files))
    return out


def _known(dotted: str, files: dict[str, Path]) -> str | None:
    """The longest in-tree module that `dotted` names (or lies inside), if any."""
    while dotted:
        if dotted in files:
            return dotted
        dotted = dotted.rpartition(".")[0]
    return None


def import_graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """module -> {imported module: line of the first import statement}."""
    files = module_files(root)
    graph: dict[str, dict[str, int]] = {}
    for name, path in files.items():
        edges: dict[str, int] = {}
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _resolve(node, name, files):
                    if target != name:
                        edges.setdefault(target, node.lineno)
        graph[name] = edges
    return graph


def strongly_connected(graph: dict[str, set[str] | dict[str, int]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative): the components with more than one node, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        comp.append(member)
                        if member == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def one_cycle(graph, members: list[str]) -> list[str]:
    """A shortest cycle through the first member inside one component, for the error text."""
    inside = set(members)
    start = members[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph.get(node, ())):
            if child == start:
                return paths[node] + [start]
            if child in inside and child not in paths:
                paths[child] = paths[node] + [child]
                queue.append(child)
    return members


def collapse(graph, level) -> dict[str, set[str]]:
    """The graph between groups: `level(module)` names each module's group."""
    out: dict[str, set[str]] = {}
    for name, edges in graph.items():
        group = level(name)
        out.setdefault(group, set())
        for target in edges:
            if level(target) != group:
                out[group].add(level(target))
    return out
