"""`harness bundle`'s choice of wheels: the walk over pip's report, the plan, the platform tags.

The report here is written by hand in pip's report format (install items with name, version and
Requires-Dist) so each expected pick is known without running pip; test_bundle_install.py runs the
real pip end to end.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement

from factrl.harness.engine.bundle.build import plan
from factrl.harness.engine.bundle.options import Options, expand_platform, read_have_file
from factrl.harness.engine.bundle.project import load_project
from factrl.harness.engine.bundle.select import nodes_from_report, target_environment, walk
from factrl.harness.engine.bundle.stubs import missing_extras, stub_version, wheel_extras, write_stub
from factrl.harness.core.errors import HarnessError

REPO = Path(__file__).resolve().parents[2]


def _item(name: str, version: str, *requires: str) -> dict:
    meta = {"name": name, "version": version}
    if requires:
        meta["requires_dist"] = list(requires)
    return {"metadata": meta}


REPORT = {"version": "1", "install": [
    _item("trl", "1.16.0", "accelerate>=1.4.0", "transformers>=5.0", "datasets>=3.0", 'vllm>=0.22; extra == "vllm"'),
    _item("accelerate", "1.15.0", "torch>=2.0", "numpy>=1.17"),
    _item("torch", "2.11.0", 'nvidia-cublas==13.0.0; platform_system == "Linux"', "sympy>=1.13"),
    _item("nvidia-cublas", "13.0.0"),
    _item("sympy", "1.14.0"),
    _item("Transformers", "5.17.0", "tokenizers>=0.22", "huggingface-hub>=1.0", 'fastapi; extra == "serving"',
          'uvicorn; extra == "serving"', 'pytest; extra == "testing"'),
    _item("tokenizers", "0.23.2", "huggingface-hub>=0.16"),
    _item("huggingface-hub", "1.33.0", "filelock"),
    _item("filelock", "3.20.0"),
    _item("datasets", "5.2.0", "huggingface-hub>=1.0", "numpy>=1.17", "pyarrow>=15", "fsspec[http]>=2023",
          'typing-extensions>=4; python_version < "3.12"'),
    _item("numpy", "2.5.2"),
    _item("pyarrow", "22.0.0"),
    _item("fsspec", "2025.10.0", 'aiohttp; extra == "http"', 'requests; extra == "dev"'),
    _item("aiohttp", "3.13.0"),
    _item("typing-extensions", "4.15.0"),
    _item("fastapi", "0.120.0", "starlette>=0.40"),
    _item("starlette", "0.49.0"),
    _item("uvicorn", "0.38.0"),
]}
ROOTS = [(Requirement("trl==1.16.0"), "requirement of p"), (Requirement("transformers[serving]==5.17.0"), "extras"),
         (Requirement("datasets==5.2.*"), "requirement of p")]
HAVE = {"torch", "transformers", "accelerate"}


def test_the_walk_keeps_what_the_target_lacks_and_skips_what_its_packages_bring():
    picked = walk(ROOTS, nodes_from_report(REPORT), HAVE, target_environment("3.12", "manylinux_2_28_x86_64"))
    # trl and datasets are the project's; huggingface-hub, numpy, pyarrow, fsspec[http] -> aiohttp come
    # through datasets; fastapi and uvicorn are transformers' serving extra, which the target's copy may
    # lack; starlette through fastapi. Not carried: the haves, what only they need (tokenizers through
    # transformers, nvidia-cublas and sympy through torch; filelock through huggingface-hub is carried,
    # since datasets needs the hub), extras nobody asked for (vllm, pytest), and typing-extensions,
    # whose marker is false on Python 3.12.
    assert list(picked) == ["trl", "datasets", "fastapi", "uvicorn", "huggingface-hub", "numpy", "pyarrow", "fsspec",
                            "starlette", "filelock", "aiohttp"]
    assert picked["fastapi"].why == 'needed by transformers[serving] 5.17.0 (fastapi)'
    assert picked["aiohttp"].why == "needed by fsspec[http] 2025.10.0 (aiohttp)"
    assert picked["trl"].why == "requirement of p"
    assert picked["pyarrow"].version == "22.0.0"


def test_markers_are_evaluated_for_the_target_python():
    picked = walk(ROOTS, nodes_from_report(REPORT), HAVE, target_environment("3.11", "manylinux_2_28_x86_64"))
    assert "typing-extensions" in picked
    assert picked["typing-extensions"].why.startswith("needed by datasets 5.2.0")


def test_a_needed_package_pip_did_not_resolve_is_an_error_naming_the_python():
    report = {"install": [item for item in REPORT["install"] if item["metadata"]["name"] != "typing-extensions"]}
    with pytest.raises(HarnessError, match=r"typing-extensions>=4.*python3\.11 on PATH"):
        walk(ROOTS, nodes_from_report(report), HAVE, target_environment("3.11", "manylinux_2_28_x86_64"))


def test_nothing_to_carry_when_the_target_has_everything():
    have = HAVE | {"trl", "datasets", "fastapi", "uvicorn"}
    assert walk(ROOTS, nodes_from_report(REPORT), have, target_environment("3.12", "manylinux_2_28_x86_64")) == {}


def test_target_environment_of_a_linux_tag():
    env = target_environment("3.12", "manylinux_2_28_x86_64")
    assert (env["python_version"], env["sys_platform"], env["platform_system"], env["platform_machine"]) == (
        "3.12", "linux", "Linux", "x86_64")
    assert target_environment("3.12", "musllinux_1_2_aarch64")["platform_machine"] == "aarch64"


def test_a_manylinux_tag_expands_to_the_older_tags_pip_matches_one_by_one():
    tags = expand_platform("manylinux_2_28_x86_64")
    assert tags[0] == "manylinux_2_28_x86_64" and tags[-1] == "manylinux1_x86_64"
    assert {"manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux_2_5_x86_64"} <= set(tags)
    assert "manylinux_2_29_x86_64" not in tags
    assert len(tags) == 24 + 3  # 2_28 .. 2_5, and the three legacy names
    assert expand_platform("manylinux2014_aarch64")[0] == "manylinux_2_17_aarch64"
    assert expand_platform("musllinux_1_2_x86_64") == ["musllinux_1_2_x86_64", "musllinux_1_1_x86_64"]
    assert expand_platform("win_amd64") == ["win_amd64"]


def test_a_freeze_file_gives_names_and_versions(tmp_path):
    path = tmp_path / "node.txt"
    path.write_text("# the node\ntorch==2.11.0+cu130\nTransformers==5.17.0\n-e git+https://x/y#egg=z\n"
                    "mypkg @ file:///opt/mypkg\n\n", encoding="utf-8")
    assert read_have_file(path) == {"torch": "2.11.0+cu130", "transformers": "5.17.0", "mypkg": None}
    path.write_text("torch=2.11\n", encoding="utf-8")
    with pytest.raises(HarnessError, match=r"node.txt:1: 'torch=2.11' is not NAME or NAME==VERSION"):
        read_have_file(path)


def test_the_plan_stands_in_the_targets_versions_and_keeps_extras_it_may_lack():
    project = load_project(REPO)
    opts = Options(python="3.12", platform="manylinux_2_28_x86_64", out=Path("unused"),
                   have={"torch": "2.11.0+cu130", "transformers": "5.17.0", "peft": None, "accelerate": "1.15.0"},
                   extras=["gpu"], without={"vllm"})
    roots, constraints, stub_versions, left_out, notes = plan(project, opts)
    texts = [str(req) for req, _ in roots]
    assert "transformers[serving]" in texts  # the target's copy, its extra's requirements resolved and carried
    assert not any(t.startswith(("torch", "peft", "accelerate", "vllm")) for t in texts)
    assert "trl==1.16.0" in texts and "bitsandbytes==0.50.2" in texts
    # Each package the target has is a stub at its version; a bare name is constrained to the project's
    # requirement (a stub only where that pins one exact version: a series' newest may not be the target's).
    assert stub_versions == {"torch": "2.11.0+cu130", "transformers": "5.17.0", "accelerate": "1.15.0"}
    assert constraints == ["peft==0.21.*"]
    assert [x.name for x in left_out] == ["vllm==0.31.0"]
    assert any("torch 2.11.0+cu130 is outside the project's torch==2.13.0" in note for note in notes)


def test_a_stub_carries_the_targets_version_and_only_the_extras_asked_of_it(tmp_path):
    import zipfile

    path = write_stub(tmp_path, "Huggingface_Hub", stub_version("1.33.0+local"),
                      {"cli": ['typer>=0.9; extra == "cli"']})
    assert path.name == "huggingface_hub-1.33.0+have-py3-none-any.whl"
    with zipfile.ZipFile(path) as archive:
        meta = archive.read("huggingface_hub-1.33.0+have.dist-info/METADATA").decode()
    assert "Version: 1.33.0+have" in meta and "Provides-Extra: cli" in meta
    assert 'Requires-Dist: typer>=0.9; extra == "cli"' in meta
    assert wheel_extras(path) == {"cli": ['typer>=0.9; extra == "cli"']}
    # pip's warning for a stub lacking an extra names the package to read for real.
    output = "WARNING: transformers 5.17.0+have does not provide the extra 'serving'\n"
    assert missing_extras(output, {"transformers"}) == {"transformers": {"serving"}}
    assert missing_extras(output, set()) == {}
