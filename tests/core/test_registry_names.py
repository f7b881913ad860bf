"""The name registry's kinds: lookup, did-you-mean, duplicates and failure isolation through real
entry points (a throwaway dist-info on sys.path), every in-tree target loading, and every name a
config or the leaderboard layout uses being registered."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from factrl.harness.core import registry
from factrl.harness.core.errors import HarnessError
from tests.helpers import harness

ROOT = Path(__file__).resolve().parents[2]

# One misspelling per kind, and the name it should suggest.
MISSES = {"methods": ("corvr", "corver"), "eval_sets": ("twowiky", "twowiki"), "tasks": ("multi_hop", "multihop"),
          "scorers": ("corver-oficial", "corver-official"), "corpus": ("remot", "remote"),
          "nli": ("hhemm", "hhem"), "judge": ("referense", "reference"), "generation": ("vlm", "vllm"),
          "extractor": ("heuristik", "heuristic")}


@pytest.mark.parametrize("kind", sorted(MISSES))
def test_every_kind_suggests_on_a_miss(kind):
    wrong, meant = MISSES[kind]
    assert meant in registry.names(kind)
    with pytest.raises(HarnessError, match=rf"unknown .*'{wrong}'\. Did you mean '{meant}'\? Available: .*{meant}"):
        registry.get(kind, wrong)


def test_unknown_kind_is_one_line():
    with pytest.raises(HarnessError, match=r"unknown registry kind 'eval_set'\. Did you mean 'eval_sets'\?"):
        registry.names("eval_set")


@pytest.mark.parametrize("kind", [k for k in registry.KINDS if k != "methods"])  # methods: tests/core/test_registry.py
def test_every_in_tree_entry_loads(kind):
    loaded = {name: e for name, e in registry.entries(kind).items() if e.origin == "in-tree"}
    assert loaded, kind
    assert {name: e.error for name, e in loaded.items() if e.error} == {}
    for name, entry in loaded.items():
        assert entry.value is not None and registry.get(kind, name) is entry.value


def test_the_paper_sets_and_the_macro():
    sets = registry.sets_in_order()
    assert [s.name for s in sets[:7]] == ["triviaqa", "nq_open", "popqa", "simpleqa", "truthfulqa", "hotpotqa",
                                          "twowiki"]
    assert registry.macro_sets() == ["triviaqa", "nq_open", "popqa", "simpleqa", "truthfulqa"]
    assert registry.eval_set("twowiki").label == "2WikiMultiHopQA"
    assert registry.tasks_of_table("accuracy") == ("closed_book", "truthfulqa")
    assert registry.tasks_of_table("multihop") == ("multihop",)


def _dist(path: Path, name: str, groups: dict[str, dict[str, str]], modules: dict[str, str]) -> Path:
    """A plugin distribution the way pip leaves one: a dist-info with entry_points.txt beside its modules."""
    info = path / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in items.items()) for group, items in groups.items()))
    for module, source in modules.items():
        (path / f"{module}.py").write_text(source)
    return path


@pytest.fixture
def plugin_path(tmp_path, monkeypatch):
    def install(name, groups, modules):
        monkeypatch.syspath_prepend(str(_dist(tmp_path, name, groups, modules)))
        registry.refresh()
    yield install
    registry.refresh()


GOOD_SET = '''
from factrl.harness.core.registry import EvalSetInfo
SET = EvalSetInfo("goodset", "Good Set", "closed_book", "goodset_plugin:SPEC", 90, False)
'''
WRONG_NAME = '''
from factrl.harness.core.registry import EvalSetInfo
SET = EvalSetInfo("othername", "X", "closed_book", "x:Y", 90, False)
'''
NO_TASK = '''
from factrl.harness.core.registry import EvalSetInfo
SET = EvalSetInfo("notask", "X", "ranking", "x:Y", 90, False)
'''


def test_plugins_broken_and_duplicate_entries_are_isolated(plugin_path):
    plugin_path("isolation-demo", {
        "harness.eval_sets": {"goodset": "goodset_plugin:SET", "broken": "missing_module_xyz:SET",
                              "triviaqa": "goodset_plugin:SET", "othername_set": "wrongname_plugin:SET",
                              "notask": "notask_plugin:SET"},
        "harness.nli": {"hhem": "goodset_plugin:SET"}},
        {"goodset_plugin": GOOD_SET, "wrongname_plugin": WRONG_NAME, "notask_plugin": NO_TASK})
    found = registry.entries("eval_sets")
    assert found["goodset"].error is None and found["goodset"].origin == "plugin isolation-demo"
    assert registry.eval_set("goodset").label == "Good Set"
    assert "goodset" in [s.name for s in registry.sets_in_order()]
    assert "ModuleNotFoundError" in found["broken"].error and "missing_module_xyz" in found["broken"].error
    assert "declares name 'othername'" in found["othername_set"].error
    assert "task 'ranking' is not registered" in found["notask"].error
    # A name taken twice: an error naming both origins, on the in-tree entry too.
    assert "registered twice (in-tree" in found["triviaqa"].error and "plugin isolation-demo" in found["triviaqa"].error
    with pytest.raises(HarnessError, match=r"evaluation set 'triviaqa' \(in-tree.*failed to load: .*registered twice"):
        registry.get("eval_sets", "triviaqa")
    with pytest.raises(HarnessError, match="registered twice"):
        registry.get("nli", "hhem")
    # The rest of each kind still loads.
    assert found["popqa"].error is None and registry.get("nli", "standin") is not None
    assert "triviaqa" not in registry.macro_sets()  # a failed entry is in no table


def test_harness_sets_lists_the_plugin_and_its_failures(tmp_path):
    site = _dist(tmp_path, "listing-demo", {"harness.eval_sets": {"goodset": "goodset_plugin:SET",
                                                                  "broken": "missing_module_xyz:SET"}},
                 {"goodset_plugin": GOOD_SET})
    listed = harness("sets", env={"PYTHONPATH": str(site)})
    assert listed.returncode == 1  # a set failed to load
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["set", "label", "task", "table", "macro", "origin"]
    names = [line.split()[0] for line in lines[1:] if line.strip() and not line.startswith("tasks")]
    assert names[:8] == ["triviaqa", "nq_open", "popqa", "simpleqa", "truthfulqa", "hotpotqa", "twowiki", "goodset"]
    assert any(line.startswith("twowiki") and "2WikiMultiHopQA" in line and "multihop" in line for line in lines)
    assert any(line.startswith("goodset") and "plugin listing-demo" in line for line in lines)
    assert any(line.startswith("broken") and "FAILED TO LOAD" in line for line in lines)
    kinds = harness("names", "judge")
    assert kinds.returncode == 0 and kinds.stdout.split()[0::3][:4] == ["embedded", "none", "openai", "reference"]
    wrong = harness("names", "judges")
    assert wrong.returncode == 2 and "Did you mean 'judge'?" in wrong.stderr and "Traceback" not in wrong.stderr


# ---- every name in a config or the layout is registered --------------------------------------
def _kind_of(group: str, path: tuple[str, ...]) -> str | None:
    """The registry kind of the value at key `path` of a config of `group` (None: not a name)."""
    last = path[-1] if path else ""
    if last == "backend" and len(path) >= 2 and path[-2] in ("nli", "extractor"):
        return path[-2]
    if last == "backend" and len(path) == 1 and group in ("corpus", "judge"):
        return group
    if group == "eval" and path == ("backend",):
        return "generation"
    if group == "eval" and path == ("scorer",):
        return "scorers"
    if group == "eval" and (path == ("sets",) or (len(path) == 2 and path[1] == "sets")):
        return "eval_sets"
    if group == "leaderboard" and path in (("raw_method",), ("reference_method",), ("focus_method",)):
        return "methods"
    if group == "grid" and last == "methods":
        return "methods"
    return None


def _keyed_kind(group: str, path: tuple[str, ...]) -> str | None:
    """The kind of the *keys* of the mapping at `path` (eval.data.<set>, layout set_labels.<set>, ...)."""
    if group == "eval" and path in (("data",), ("aliases",), ("revision",)):
        return "eval_sets"
    if group == "leaderboard" and path == ("set_labels",):
        return "eval_sets"
    if group == "leaderboard" and path == ("method_labels",):
        return "methods"
    return None


def config_names(root: Path) -> list[tuple[str, str, str]]:
    """(file:key, kind, name) for every name-bearing value or key of the configs under root/configs."""
    found: list[tuple[str, str, str]] = []

    def walk(file: Path, node, path: tuple[str, ...]) -> None:
        where = f"{file.relative_to(root)}:{'.'.join(path)}"
        group = file.relative_to(root / "configs").parts[0]
        if isinstance(node, dict):
            keyed = _keyed_kind(group, path)
            for key, value in node.items():
                if keyed:
                    found.append((where, keyed, str(key)))
                walk(file, value, (*path, str(key)))
            return
        kind = _kind_of(group, path)
        if kind and node is not None:
            for value in (node if isinstance(node, list) else [node]):
                if isinstance(value, str) and not value.startswith("$"):
                    found.append((where, kind, value))
        elif isinstance(node, list):
            for item in node:
                walk(file, item, path)

    for file in sorted((root / "configs").rglob("*.yaml")):
        walk(file, yaml.safe_load(file.read_text(encoding="utf-8")) or {}, ())
    return found


def test_every_name_in_a_config_or_the_layout_is_registered():
    found = config_names(ROOT)
    kinds = {kind for _, kind, _ in found}
    # The scan reaches every kind a config names (a scan that found nothing would pass).
    assert {"eval_sets", "generation", "scorers", "corpus", "judge", "nli", "extractor", "methods"} <= kinds
    assert ("configs/eval/multihop.yaml:sets", "eval_sets", "twowiki") in found
    unknown = [f"{where}: {name!r} is not a registered {kind} name" for where, kind, name in found
               if name not in registry.names(kind)]
    assert not unknown, "\n".join(unknown)


def test_the_scan_catches_an_unregistered_name(tmp_path):
    # The old layout's 2Wiki name, and a set in an eval option, both unregistered.
    configs = tmp_path / "configs"
    (configs / "leaderboard" / "layout").mkdir(parents=True)
    (configs / "eval").mkdir()
    (configs / "leaderboard" / "layout" / "old.yaml").write_text("set_labels:\n  2wikimultihopqa: 2WikiMultiHopQA\n")
    (configs / "eval" / "x.yaml").write_text("sets: [hotpotqa, twowikki]\nbackend: hf\n")
    found = config_names(tmp_path)
    bad = [(kind, name) for _, kind, name in found if name not in registry.names(kind)]
    assert bad == [("eval_sets", "twowikki"), ("eval_sets", "2wikimultihopqa")]


BACKENDS_PLUGIN = '''
from factrl.evals.scorers.default import DefaultScorer
from factrl.harness.services.nli.standin import StandinScorer


class Always(StandinScorer):
    backend = "always"

    def _score(self, pairs):
        return [0.75 for _ in pairs]


def build_nli(settings):
    return Always(settings.batch_size)


class Lenient(DefaultScorer):
    name = "lenient"
'''


def test_a_plugin_backend_and_scorer_are_dispatched_by_name(plugin_path):
    # The services' own dispatch (load_nli, get_scorer) reaches a plugin's entries: no edit of theirs.
    from factrl.evals.scorers import get_scorer, scorer_names
    from factrl.harness.services.nli import load_nli

    plugin_path("backends-demo", {"harness.nli": {"always": "backends_plugin:build_nli"},
                                  "harness.scorers": {"lenient": "backends_plugin:Lenient"}},
                {"backends_plugin": BACKENDS_PLUGIN})
    assert "always" in registry.names("nli") and "lenient" in scorer_names()
    assert load_nli({"backend": "always"}).score([("Paris is in France.", "Paris is in Spain.")]) == [0.75]
    assert get_scorer("lenient").name == "lenient"
    with pytest.raises(ValueError, match=r"backend='alway' is not valid. Did you mean 'always'\? Use one of always, deberta, hhem, standin"):
        load_nli({"backend": "alway"})
