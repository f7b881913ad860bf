"""No import cycles: between modules, between the packages' parts, and between the layers.

The graph is static (tests/core/import_graph.py: every `import` statement of every module file,
module-level and inside functions alike, since a lazy import still ties two modules together).
Three views, each must be a DAG once the allow-listed edges are set aside:

- modules: every `factrl.*` module (and the NOVER plugin's);
- units: each top-level module or sub-package of harness/, evals/, methods/ and leaderboard/
  (so `harness.judge` and `harness.services.models` are nodes, and a cycle through any of their files
  counts);
- layers: the packages, with harness/ split in three by its folders: harness/core/ and
  harness/services/ are the foundation that evals, methods and leaderboard stand on, the
  packages left at harness/'s top (training/, pool/, probe/) are the method runtime, and
  harness/engine/ is the roof that drives them. The layer of a module is read from its path
  (`harness_layer`), so a new part takes its layer from the folder it is put in; a `cli` module
  is the engine wherever it sits.

ALLOWED holds the edges left to untie, each with the reason it is still there; an entry whose
edge no longer exists fails the test, so the list only shrinks.
"""
from __future__ import annotations

import pytest

from .import_graph import collapse, import_graph, one_cycle, strongly_connected

HARNESS_LAYERS = ("foundation", "method runtime", "engine")
# harness/'s layer folders; any other package at harness/'s top is the method runtime, and
# harness/__init__.py (only __version__) stands with the foundation.
LAYER_FOLDERS = {"core": "foundation", "services": "foundation", "engine": "engine"}


def harness_layer(parts: list[str]) -> str:
    """The layer of `factrl.harness.<parts...>`, read from the folder it sits in."""
    return "foundation" if not parts else LAYER_FOLDERS.get(parts[0], "method runtime")


def harness_parts() -> dict[str, str]:
    """{part: layer} for every module or package of harness/ (a layer folder's children are the
    parts: `core.errors`, `services.judge`; elsewhere the package: `training`), read from the tree."""
    from .import_graph import ROOT

    out: dict[str, str] = {}
    for path in sorted((ROOT / "harness").iterdir()):
        if path.name in LAYER_FOLDERS:
            for child in sorted(path.iterdir()):
                if (child.suffix == ".py" and child.stem != "__init__") or (child / "__init__.py").is_file():
                    out[f"{path.name}.{child.stem}"] = LAYER_FOLDERS[path.name]
        elif (path / "__init__.py").is_file():
            out[path.name] = "method runtime"
        elif path.suffix == ".py" and path.stem != "__init__":
            out[path.stem] = "loose"  # test_every_part_sits_in_a_layer_folder names it
    return out


PARTS = harness_parts()
# The parts of harness/ that evals/, methods/ and leaderboard/ may import: helpers with no
# knowledge of runs, methods or the leaderboard (the name registry among them: it names every
# layer's parts as "module:attr" data and imports none of them).
FOUNDATION = {part for part, layer in PARTS.items() if layer == "foundation"}

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
    """`factrl.harness.services.judge.client` -> `harness.services.judge`; `factrl.harness.training.grpo`
    -> `harness.training`; `factrl.evals` -> `evals`; a `cli` module is its own."""
    parts = _short(module).split(".")
    if _is_cli(parts):
        return ".".join(parts)
    depth = 3 if parts[0] == "harness" and len(parts) > 2 and parts[1] in LAYER_FOLDERS else 2
    return ".".join(parts[:depth])


# The parts that run a method without a run around it (the trainer, the pool, the gaming probe):
# the leaderboard reads probe tables from them.
METHOD_RUNTIME = {part for part, layer in PARTS.items() if layer == "method runtime"}

LAYERS = ("harness (foundation)", "evals", "methods", "factrl_nover", "factrl_truthrl", "factrl_binary_rar", "factrl_rlcr",
          "harness (method runtime)", "leaderboard",
          "harness (engine)")


def layer(module: str) -> str:
    parts = _short(module).split(".")
    if _is_cli(parts):
        return "harness (engine)"
    if parts[0] == "harness":
        return f"harness ({harness_layer(parts[1:])})"
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


def test_every_part_sits_in_a_layer_folder():
    # No loose module at harness/'s top: a new part goes into core/, services/ or engine/, or is a
    # package of the method runtime, and so says its layer by where it is.
    loose = sorted(part for part, layer in PARTS.items() if layer == "loose")
    assert not loose, f"harness/{loose[0]}.py sits at harness/'s top: move it into one of {sorted(LAYER_FOLDERS)}/"
    seen = set()
    for module in GRAPH:
        parts = _short(module).split(".")
        if parts[0] == "harness" and len(parts) > 1:
            seen.add(".".join(parts[1:3]) if parts[1] in LAYER_FOLDERS and len(parts) > 2 else parts[1])
    assert seen - set(LAYER_FOLDERS) == set(PARTS)  # every part the graph sees, and no more, is read
    # Anchors, so that a reader that misreads the tree cannot pass.
    assert {"core.errors", "core.settings", "core.method", "services.models", "services.judge",
            "core.registry"} <= FOUNDATION
    assert METHOD_RUNTIME == {"training", "pool", "probe"}
    assert {PARTS["engine.run"], PARTS["engine.grid"], PARTS["engine.config"]} == {"engine"}


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


def test_contracts_lists_the_layers():
    # docs/CONTRACTS.md, "Packages", lists each layer's parts; it follows the tree.
    import re

    from .import_graph import ROOT

    text = " ".join((ROOT / "docs" / "CONTRACTS.md").read_text(encoding="utf-8").split())

    def listed(opening: str) -> set[str]:
        start = text.index(opening) + len(opening)
        return set(re.findall(r"`(\w+)/?`", text[start:text.index(")", start)]))

    def names(folder: str, layer: str) -> set[str]:
        return {p.split(".")[1] for p, found in PARTS.items() if p.startswith(folder + ".") and found == layer}

    assert listed("the harness foundation (harness/core/: ") == names("core", "foundation")
    assert listed("harness/services/: ") == names("services", "foundation")
    assert listed("the method runtime (") == METHOD_RUNTIME
    assert listed("the engine (harness/engine/: ") == names("engine", "engine")
