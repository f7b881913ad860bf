"""Method labels in published tables come from the methods themselves (`Method.label`), read
from their source without importing them; a table layout may still override one."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from factrl.harness.core.registry import methods as registry  # the module whose functions read it
from factrl.harness.core.method import Method
from factrl.harness.core.registry import display_label, get_method
from factrl.leaderboard import record_run
from factrl.leaderboard.tables import Layout
from factrl.leaderboard.testing import make_run_dir

IN_TREE = {"corver": "CorVer", "fspo": "FSPO", "rlfh": "RLFH", "forag": "FoRAG", "knowrl": "KnowRL", "raw": "Raw"}


def test_in_tree_methods_label_themselves_and_the_source_read_agrees():
    for name, label in IN_TREE.items():
        assert get_method(name).label == label == display_label(name), name
    assert Layout({}).method_label("corver") == "CorVer"  # no layout entry: the method's own label
    assert Layout({"method_labels": {"corver": "Ours"}, "focus_method": "corver"}).method_label("corver") == "Ours (ours)"
    assert display_label("not-a-method") == "not-a-method"


def test_an_unlabelled_method_shows_its_name_and_a_label_must_be_text():
    class Plain(Method):
        name = "plain"
        description = "x"

    class Child(Plain):  # a labelled parent's label is not inherited under another name
        name = "child"
        label = "The Child"

    class Grandchild(Child):
        name = "grandchild"

    assert (Plain.label, Child.label, Grandchild.label) == ("plain", "The Child", "grandchild")
    Plain.validate()

    class Blank(Method):
        name = "blank"
        description = "x"

    Blank.label = "  "
    with pytest.raises(TypeError, match="`label` must be a non-empty string"):
        Blank.validate()


def test_a_plugin_label_is_read_from_its_source_without_importing_it(tmp_path, monkeypatch):
    (tmp_path / "labelled_plugin.py").write_text(textwrap.dedent("""
        from factrl.harness.core.method import Method

        class Base(Method):
            label = "Shared Label"

        class Mine(Base):
            name = "mine"
            description = "x"

        METHOD = Mine
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    real = registry.method_target
    monkeypatch.setattr(registry, "method_target",
                        lambda name: "labelled_plugin:METHOD" if name == "mine" else real(name))
    registry.declared.cache_clear()
    try:
        assert display_label("mine") == "Shared Label"  # found on a base class of the same module
        assert "labelled_plugin" not in sys.modules
    finally:
        registry.declared.cache_clear()


PUBLISH = """
import sys
from factrl.leaderboard.cli import main
code = main(sys.argv[1:])
print("torch imported" if "torch" in sys.modules else "torch not imported")
sys.exit(code)
"""


def test_publish_labels_the_plugin_and_in_tree_methods_without_importing_torch(runs, store_path, tmp_path):
    if registry.method_target("nover") is None:
        pytest.skip("the NOVER plugin is not installed (make setup installs it)")
    for method in ("raw", "corver", "nover"):
        record_run(make_run_dir(runs, method=method, model="m", scores={"triviaqa": 0.5}), store_path)
    layout = tmp_path / "layout.yaml"
    layout.write_text(json.dumps({"method_labels": {}}))  # nothing from the layout: every label is the method's

    def publish(out):
        done = subprocess.run([sys.executable, "-c", PUBLISH, "publish", "--store", str(store_path), "--out",
                               str(out), "--layout", str(layout), "--reported", "none"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "torch not imported" in done.stdout
        return (out / "leaderboard.md").read_text()

    markdown = publish(tmp_path / "site")
    assert "| NOVER" in markdown and "| CorVer" in markdown and "| Raw" in markdown
    layout.write_text(json.dumps({"method_labels": {"nover": "NOVER (plugin)"}}))  # the layout still overrides
    assert "| NOVER (plugin)" in publish(tmp_path / "site2")
