"""No import cycles: between modules, between the packages' parts, and between the layers.

The graph is static (tests/core/import_graph.py: every `import` statement of every module file,
module-level and inside functions alike, since a lazy import still ties two modules together).
Three views, each must be a DAG once the allow-listed edges are set aside:

- modules: every `factrl.*` module (and the NOVER plugin's);
- units: each top-level module or sub-package of harness/, evals/, methods/ and leaderboard/
  (so `harness.judge` and `harness.services.models` are nodes, and a cycle through any of their files
  counts);
- layers: the packages, with harness/ split in three: the foundation that evals, methods and
  leaderboard stand on, the method runtime (trainer, pool, probe) and the engine on top that drives
  them. harness/ is the roof; only its foundation is also the floor. Each part of harness/ declares
  its layer itself, `LAYER = "foundation" | "method runtime" | "engine"` at module level (in its
  `__init__.py` for a package), read here from the source (`declared_layers`); a `cli` module is the
  engine wherever it sits.

ALLOWED holds the edges left to untie, each with the reason it is still there; an entry whose
edge no longer exists fails the test, so the list only shrinks.
"""
from __future__ import annotations

import pytest

from .import_graph import collapse, import_graph, one_cycle, strongly_connected

HARNESS_LAYERS = ("foundation", "method runtime", "engine")


def declared_layers() -> dict[str | None, str]:
    """{part of harness/ (None: harness/__init__.py itself): its declared LAYER}, read with ast."""
    import ast

    from .import_graph import ROOT

    out: dict[str | None, str] = {}
    for path in sorted((ROOT / "harness").iterdir()):
        if path.is_dir() and (path / "__init__.py").is_file():
            part, source = path.name, path / "__init__.py"
        elif path.suffix == ".py":
            part, source = (None if path.stem == "__init__" else path.stem), path
        else:
            continue
        for node in ast.parse(source.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["LAYER"] \
                    and isinstance(node.value, ast.Constant):
                out[part] = node.value.value
        out.setdefault(part, "")  # undeclared: test_every_part_declares_its_layer names it
    return out


DECLARED = declared_layers()
# The parts of harness/ that evals/, methods/ and leaderboard/ may import: helpers with no
# knowledge of runs, methods or the leaderboard (the name registry among them: it names every
# layer's parts as "module:attr" data and imports none of them).
FOUNDATION = {part for part, declared in DECLARED.items() if part and declared == "foundation"}

# (importer, imported) -> why the edge is still there.
ALLOWED: dict[tuple[str, str], str] = {}

GRAPH = import_graph()


def _short(name: str) -> str:
    return name.removeprefix("factrl.")


def _graph_without_allowed() -> dict[str, dict[str, int]]:
    out = {name: dict(edges) for name, edges in GRAPH.items()}
    for importer, imported in ALLOWED:
        out.get(f"factrl.{importer}", {}).pop(f"factrl.{imported}", None)
    return out


def _is_cli(parts: list[str]) -> bool:
    # A command's entry point (`harness judge` is harness/services/judge/cli.py): it sits on top of
    # everything, whichever folder holds it.
    return parts[-1] == "cli"


def unit(module: str) -> str:
    """`factrl.harness.services.judge.client` -> `harness.judge`; `factrl.evals` -> `evals`; a `cli` module is its own."""
    parts = _short(module).split(".")
    return ".".join(parts) if _is_cli(parts) else ".".join(parts[:2])


# The engine's parts that run a method without a run around it (the trainer, the pool, the gaming
# probe): the leaderboard reads probe tables from them.
METHOD_RUNTIME = {part for part, declared in DECLARED.items() if declared == "method runtime"}

LAYERS = ("harness (foundation)", "evals", "methods", "factrl_nover", "factrl_truthrl", "factrl_binary_rar", "factrl_rlcr",
          "harness (method runtime)", "leaderboard",
          "harness (engine)")


def layer(module: str) -> str:
    parts = _short(module).split(".")
    if _is_cli(parts):
        return "harness (engine)"
    if parts[0] == "harness":  # harness/__init__.py (holding only __version__) declares its own
        return f"harness ({DECLARED[parts[1] if len(parts) > 1 else None]})"
    return parts[0]


def _describe(graph, components) -> str:
    lines = []
    for members in components:
        cycle = one_cycle(graph, members)
        lines.append(f"{len(members)} in a cycle, e.g. " + " -> ".join(_short(m) for m in cycle))
        for a, b in zip(cycle, cycle[1:]):
            if a in GRAPH and b in GRAPH.get(a, {}):
                lines.append(f"    {_short(a)} line {GRAPH[a][b]} imports {_short(b)}")
    return "\n".join(lines)


def test_the_graph_sees_the_packages():
    # A parse that silently found nothing would pass every check below.
    assert len(GRAPH) > 150
    assert "factrl.harness.core.errors" in GRAPH["factrl.harness.engine.run.orchestrate"] or any(
        m.startswith("factrl.harness.core.errors") for m in GRAPH["factrl.harness.engine.run.orchestrate"])
    assert "factrl.harness.core.errors" in GRAPH["factrl.evals.sets"]  # an absolute import
    assert "factrl.harness.core.answers" in GRAPH["factrl.evals.sets"]  # a relative one


def test_every_part_declares_its_layer():
    # A new module or package of harness/ says where it stands; none falls to the engine unnoticed.
    wrong = {part or "harness/__init__.py": declared for part, declared in DECLARED.items()
             if declared not in HARNESS_LAYERS}
    assert not wrong, f"declare LAYER = one of {HARNESS_LAYERS} at module level (an __init__.py for a package): {wrong}"
    parts = {_short(m).split(".")[1] for m in GRAPH if _short(m).startswith("harness.") and _short(m) != "harness"}
    assert parts == set(DECLARED) - {None}  # every part the graph sees, and no more, is read
    # Anchors, so that a reader that misreads the declarations cannot pass.
    assert {"errors", "settings", "method", "models", "judge", "registry"} <= FOUNDATION
    assert "training" in METHOD_RUNTIME and DECLARED["run"] == DECLARED["grid"] == DECLARED["config"] == "engine"


def test_cycle_finder_finds_a_cycle():
    graph = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert one_cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]


def test_no_cycle_between_modules():
    graph = _graph_without_allowed()
    components = strongly_connected(graph)
    assert not components, "import cycles between modules:\n" + _describe(graph, components)


def test_no_cycle_between_package_parts():
    graph = collapse(_graph_without_allowed(), unit)
    components = strongly_connected(graph)
    assert not components, "import cycles between package parts:\n" + "\n".join(
        " -> ".join(one_cycle(graph, c)) for c in components)


def test_harness_is_the_roof_not_also_the_floor():
    # Stricter than "no cycle between layers": every import points down LAYERS (or stays in its layer).
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = sorted(f"{_short(a)} line {GRAPH[a][b]} imports {_short(b)} ({layer(a)} -> {layer(b)})"
                    for a, edges in _graph_without_allowed().items() for b in edges
                    if rank[layer(a)] < rank[layer(b)])
    assert not upward, "imports that point up the layers:\n" + "\n".join(upward)


def test_every_allowed_edge_still_exists():
    # Empty today; an edge allowed while it is untied must still exist, so the list only shrinks.
    gone = [edge for edge in sorted(ALLOWED) if f"factrl.{edge[1]}" not in GRAPH.get(f"factrl.{edge[0]}", {})]
    assert not gone, f"{gone} no longer exist: drop them from ALLOWED"


def test_one_import_style_per_package():
    # Relative inside a package (factrl.harness.*, factrl.evals.*, ...), absolute across packages.
    import ast

    from .import_graph import module_files

    absolute_inside = []
    for name, path in module_files().items():
        own = ".".join(name.split(".")[:2]) if name.startswith("factrl.") else None
        if own is None:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module \
                    and (node.module == own or node.module.startswith(own + ".")):
                absolute_inside.append(f"{_short(name)} line {node.lineno}: from {node.module} import ...")
            elif isinstance(node, ast.Import) and any(a.name.startswith(own + ".") for a in node.names):
                absolute_inside.append(f"{_short(name)} line {node.lineno}: import {node.names[0].name}")
    assert not absolute_inside, "absolute imports inside their own package (write them relative):\n" + "\n".join(
        absolute_inside)


def test_contracts_lists_the_declared_layers():
    # docs/CONTRACTS.md, "Packages", names the foundation and the method runtime; it follows the declarations.
    import re

    from .import_graph import ROOT

    text = " ".join((ROOT / "docs" / "CONTRACTS.md").read_text(encoding="utf-8").split())

    def listed(opening: str) -> set[str]:
        start = text.index(opening) + len(opening)
        return set(re.findall(r"`(\w+)/?`", text[start:text.index(")", start)]))

    assert listed("the harness foundation (") == FOUNDATION
    assert listed("the method runtime (") == METHOD_RUNTIME
