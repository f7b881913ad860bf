"""Every method has what docs/ADDING_A_METHOD.md says it must: each `methods/<name>/` folder and
each `plugins/<dir>/` package is checked against the guide's lists ("In tree: the files", "As a plugin",
"README sections the tests check"), so a method added without one of its parts fails here with the part named.
"""
from __future__ import annotations

import importlib
import re
import sys
import tomllib
from collections.abc import Mapping

import pytest
from omegaconf import OmegaConf

from factrl.harness.core.method import Method
from factrl.harness.core.registry import declared
from tests import method_readme
from tests.helpers import REPO

IN_TREE = sorted(p.name for p in (REPO / "methods").iterdir()
                 if (p / "__init__.py").is_file() and not p.name.startswith("_"))
PLUGINS = sorted(p.name for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").is_file())
VECTORS = REPO / "tests" / "reference_vectors"


def _common_problems(cls: type[Method], readme_path, tests_dir) -> list[str]:
    """What the guide asks of every method that trains: a settings class, a README with the fixed
    sections, its tests, reference vectors when it ports released code, literal label and fidelity."""
    problems: list[str] = []
    if cls.algorithm == "none":
        return problems  # evaluation-only (raw): no reward, no settings, nothing to document beyond the class
    if cls.settings_class is None:
        problems.append("no settings_class (docs/ADDING_A_METHOD.md, \"Settings\")")
    if not readme_path.is_file():
        problems.append(f"no {readme_path.relative_to(REPO)}")
    else:
        problems += [f"{readme_path.relative_to(REPO)}: {p}" for p in
                     method_readme.readme_problems(readme_path.read_text())]
    if not any(tests_dir.glob("test_*.py")):
        problems.append(f"no tests in {tests_dir.relative_to(REPO)}/")
    if cls.fidelity == "original" and not any((VECTORS / cls.name).glob("*.json")):
        problems.append(f"fidelity 'original' but no reference vectors in tests/reference_vectors/{cls.name}/")
    if cls.label != cls.name and declared(cls.name, "label") is None:
        problems.append("`label` is not a string literal in the class body (tables read it from source)")
    if "fidelity" in cls.__dict__ and declared(cls.name, "fidelity") is None:
        problems.append("`fidelity` is not a string literal in the class body (tables read it from source)")
    return problems


@pytest.mark.parametrize("name", IN_TREE)
def test_an_in_tree_method_has_what_the_guide_lists(name):
    module = importlib.import_module(f"factrl.methods.{name}")
    cls = getattr(module, "METHOD", None)
    assert isinstance(cls, type) and issubclass(cls, Method), f"methods/{name}/__init__.py: no METHOD = <Method subclass>"
    cls.validate()
    problems = [] if cls.name == name else [f"METHOD.name is {cls.name!r}, the folder {name!r}"]
    yaml = REPO / "configs" / "method" / f"{name}.yaml"
    if not yaml.is_file():
        problems.append(f"no configs/method/{name}.yaml (its defaults)")
    else:
        node = OmegaConf.load(yaml)
        if node.get("name") != name:
            problems.append(f"configs/method/{name}.yaml: `name: {name}` missing")
        settings = cls.settings_class
        if settings is not None:
            if settings.DEFAULTS != f"method/{name}.yaml":
                problems.append(f"{settings.__name__}.DEFAULTS is {settings.DEFAULTS!r}, not 'method/{name}.yaml'")
            settings.from_mapping()  # the YAML gives every field its default and holds no unknown key
            if cls.config_defaults:
                problems.append("config_defaults set: an in-tree method's defaults are its YAML only")
    problems += _common_problems(cls, REPO / "methods" / name / "README.md", REPO / "tests" / name)
    assert problems == [], f"methods/{name}: " + "; ".join(problems)


@pytest.mark.parametrize("folder", PLUGINS)
def test_a_plugin_has_what_the_guide_lists(folder):
    root = REPO / "plugins" / folder
    project = tomllib.loads((root / "pyproject.toml").read_text())
    entries = project.get("project", {}).get("entry-points", {}).get("harness.methods", {})
    assert len(entries) == 1, f"plugins/{folder}/pyproject.toml: one [project.entry-points.\"harness.methods\"] entry"
    (name, target), = entries.items()
    module_name, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module_name), attr or "METHOD")
    assert isinstance(cls, type) and issubclass(cls, Method), f"{target} is not a Method subclass"
    cls.validate()
    problems = [] if cls.name == name else [f"entry point {name!r} but the class's name is {cls.name!r}"]
    settings = cls.settings_class
    if settings is not None and not (isinstance(settings.DEFAULTS, Mapping) or cls.config_defaults):
        problems.append(f"{settings.__name__}.DEFAULTS must be a mapping (a plugin ships no configs/)")
    if (REPO / "configs" / "method" / f"{name}.yaml").exists():
        problems.append(f"configs/method/{name}.yaml exists: a plugin's defaults live in the plugin")
    testpaths = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["testpaths"]
    if f"plugins/{folder}/tests" not in testpaths:
        problems.append(f"plugins/{folder}/tests is not in the harness's pytest testpaths (pyproject.toml)")
    if folder not in (REPO / "Makefile").read_text().split("PLUGINS := ", 1)[1].splitlines()[0].split():
        problems.append(f"{folder} is not in the Makefile's PLUGINS (make setup installs them)")
    problems += _common_problems(cls, root / "README.md", root / "tests")
    assert problems == [], f"plugins/{folder}: " + "; ".join(problems)


def test_the_readme_check_names_what_is_missing():
    complete = "\n".join([*method_readme.SECTIONS[:-1], "## Fidelity", method_readme.FIDELITY_HEADER,
                          "## Changelog", "- 2026-12-04: first version."])
    assert method_readme.readme_problems(complete) == []
    assert method_readme.readme_problems(complete.replace("## Hyperparameters", "## Settings")) == [
        "no `## Hyperparameters` section"]
    assert method_readme.readme_problems(complete.replace("2026-12-04", "first")) == [
        "no dated entry under `## Changelog` (YYYY-MM or YYYY-MM-DD)"]
    assert "sections out of order" in method_readme.readme_problems(
        complete.replace("## Paper and citation", "x").replace("## Changelog", "## Paper and citation\n## Changelog"))[0]
    assert method_readme.readme_problems(complete.replace(method_readme.FIDELITY_HEADER, "| a | b |")) == [
        f"no `## Fidelity` section with the table `{method_readme.FIDELITY_HEADER}`"]


def test_a_folder_without_method_says_what_is_missing_and_how_to_fix_it(tmp_path, capsys):
    """A package under methods/ without METHOD: `harness methods` names the file and the line to add
    (not a bare AttributeError), and asking for the method raises the same words."""
    import factrl.methods
    from factrl.harness.core.errors import HarnessError
    from factrl.harness.engine.methods_cli import methods_main
    from factrl.harness.core.registry import get_method, refresh

    (tmp_path / "nomethod").mkdir()
    (tmp_path / "nomethod" / "__init__.py").write_text('"""A method folder that forgot its METHOD."""\n')
    # The registry lists the folders of factrl.methods' search locations: add this one for the test.
    locations = factrl.methods.__spec__.submodule_search_locations
    locations.append(str(tmp_path))
    refresh()
    fix = ("methods/nomethod/__init__.py defines no METHOD: end it with `METHOD = <its Method subclass>` "
           "(docs/ADDING_A_METHOD.md)")
    try:
        assert methods_main([]) == 1
        line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("nomethod"))
        assert line.endswith(f"FAILED TO LOAD: {fix}") and "AttributeError" not in line
        with pytest.raises(HarnessError, match=re.escape(fix)):
            get_method("nomethod")
    finally:
        locations.remove(str(tmp_path))
        refresh()
        sys.modules.pop("factrl.methods.nomethod", None)
