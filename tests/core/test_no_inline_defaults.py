"""Defaults live in one place, the YAML under configs/ (docs/CONTRACTS.md, "Settings"): the product
source holds no second copy of a setting's default that could drift from it (as the remote
corpus's `min_interval_s` once did: 2.0 in configs/corpus/remote.yaml, 1.0 in two fallbacks).

The scan (ast, every product module) finds, for every key any YAML under configs/ has:
- `node.get("key", <literal>)` and `node.get("key") or <literal>`: a fallback for a config value
  (a scalar fallback for a key that is a node in every YAML is none: it cannot be that setting);
- a keyword default `def f(..., key=<literal>)` or a dataclass field `key: T = <literal>` whose
  literal is the value a YAML gives that key, for a key of one config group (DISTINCT): a copy of
  the default.
Settings classes read their defaults from the YAML (harness/core/settings.py); code receives the
parsed objects. ALLOWED lists what is left, each with its reason; an entry that no longer
matches fails, so the list only shrinks.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Iterator

import yaml

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("harness", "evals", "leaderboard", "methods", "plugins")
# Files of other tools, not the harness's settings: Hydra's launchers, Accelerate's configs.
NOT_SETTINGS = ("hydra", "accelerate")

# (file, key) -> why it stays. Empty: an entry needs a reason no settings class can answer.
ALLOWED: dict[tuple[str, str], str] = {}


def _yaml_values() -> tuple[dict[str, list[Any]], dict[str, set[str]]]:
    """Every key of every settings YAML with the scalar values it takes there, and the groups
    (configs/<group>/, `root` for config.yaml) that have it."""
    out: dict[str, list[Any]] = {}
    groups: dict[str, set[str]] = {}

    def walk(node: Any, group: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "defaults":
                    continue
                out.setdefault(str(key), [])
                groups.setdefault(str(key), set()).add(group)
                if not isinstance(value, (dict, list)):
                    out[str(key)].append(value)
                walk(value, group)
        elif isinstance(node, list):
            for item in node:
                walk(item, group)

    for path in sorted((REPO / "configs").rglob("*.yaml")):
        parts = path.relative_to(REPO / "configs").parts
        if parts[0] not in NOT_SETTINGS:
            walk(yaml.safe_load(path.read_text(encoding="utf-8")), parts[0] if len(parts) > 1 else "root")
    return out, groups


KEYS, GROUPS = _yaml_values()
# A keyword default is a copy of a setting only when its name says which: a key of one group alone.
# `seed=0`, `batch_size=16` or `device="cpu"` name keys of many groups; the scan cannot tell which
# setting (if any) such a parameter stands for, so it leaves them to review. `.get` fallbacks read a
# config node by the key itself and are flagged whatever the key.
DISTINCT = {key for key, where in GROUPS.items() if len(where) == 1}


def _same(literal: Any, value: Any) -> bool:
    if isinstance(literal, bool) or isinstance(value, bool):
        return isinstance(literal, bool) and isinstance(value, bool) and literal == value
    if isinstance(literal, (int, float)) and isinstance(value, (int, float)):
        return float(literal) == float(value)
    return isinstance(literal, str) and literal == value


def _literal(node: ast.AST) -> tuple[bool, Any]:
    """(is a literal that would stand in for a setting, its value)."""
    if isinstance(node, ast.Constant) and node.value is not None and node.value != "":
        return True, node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return True, -node.operand.value
    items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else node.values if isinstance(node, ast.Dict) else []
    if items and all(isinstance(item, ast.Constant) for item in items):  # [42], not [settings.seed]
        return True, None
    return False, None


def _could_be(key: str, fallback: ast.AST) -> bool:
    """Whether a `.get` fallback could stand in for the setting `key`: not when the key holds only
    nodes in every YAML (train.rollout: {...}) and the fallback is a scalar (a step's timings read
    `phases.get("rollout", 0.0)`: a node's default is never a number)."""
    return bool(KEYS[key]) or not isinstance(fallback, (ast.Constant, ast.UnaryOp))


def _get_key(node: ast.AST) -> str | None:
    """"k" of `x.get("k", ...)`."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    return None


def _findings(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line, key, what) of every inline default in one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        key = _get_key(node)
        if key in KEYS and len(node.args) == 2 and _literal(node.args[1])[0] and _could_be(key, node.args[1]):
            yield node.lineno, key, f'.get("{key}", {ast.unparse(node.args[1])})'
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and len(node.values) == 2:
            key = _get_key(node.values[0])
            if key in KEYS and len(node.values[0].args) == 1 and _literal(node.values[1])[0] and _could_be(
                    key, node.values[1]):
                yield node.lineno, key, f'.get("{key}") or {ast.unparse(node.values[1])}'
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            for arg, default in pairs:
                literal, value = _literal(default)
                if arg.arg in DISTINCT and literal and any(_same(value, v) for v in KEYS[arg.arg]):
                    yield node.lineno, arg.arg, f"def {node.name}(..., {arg.arg}={ast.unparse(default)})"
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
                    name = item.target.id
                    literal, value = _literal(item.value)
                    if name in DISTINCT and literal and any(_same(value, v) for v in KEYS[name]):
                        yield item.lineno, name, f"class {node.name}: {name} = {ast.unparse(item.value)}"


def _scan() -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for root in SOURCES:
        for path in sorted((REPO / root).rglob("*.py")):
            if "tests" in path.relative_to(REPO).parts:
                continue
            rel = str(path.relative_to(REPO))
            for line, key, what in _findings(path):
                found.setdefault((rel, key), []).append(f"{rel}:{line}: {what}")
    return found


def test_no_inline_copy_of_a_yaml_default():
    found = _scan()
    new = [line for where, lines in sorted(found.items()) if where not in ALLOWED for line in lines]
    assert not new, ("a default written again in code (read it through the group's settings class, "
                     "harness/core/settings.py):\n" + "\n".join(new))
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"ALLOWED entries that no longer match (remove them): {stale}"


def test_the_scan_finds_what_it_looks_for(tmp_path):
    """The scan's own proof: each form it forbids, in a module of its own."""
    module = tmp_path / "m.py"
    module.write_text(
        "from dataclasses import dataclass\n"
        "def a(cfg):\n    return cfg.get('min_interval_s', 1.0)\n"
        "def b(cfg):\n    return cfg.get('concurrency') or 8\n"
        "def c(*, heartbeat_s=60):\n    return heartbeat_s\n"
        "@dataclass\nclass D:\n    breaker_failures: int = 3\n    top_p: float = 1.0\n"
        "def fine(cfg, *, other=3, stale_s=None):\n    return cfg.get('min_interval_s'), cfg.get('nothing', 3)\n"
        "def timings(phases):\n    return phases.get('rollout', 0.0)\n")  # rollout: a node in every YAML
    # top_p names keys of several groups (train, model, judge, pool.filter): left to review
    assert sorted(key for _, key, _ in _findings(module)) == ["breaker_failures", "concurrency", "heartbeat_s",
                                                              "min_interval_s"]
