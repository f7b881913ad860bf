"""`harness bundle`: the wheels a machine without a package index needs to run the harness.

    harness bundle --python 3.12 --platform manylinux_2_28_x86_64 --out DIR --have-file node-packages.txt
    harness bundle ... --have torch==2.11.0,transformers==5.17.0,peft,accelerate==1.15.0 --extras gpu --without vllm

Gathers, for the target Python and platform (`pip download --only-binary=:all:`), the wheels of the
project's requirements that the target lacks (the dependency closure, resolved against the versions
the target has, less what it has), builds the project's own wheel and its plugins', adds the demo
asset wheels and the converted embedded models if small, and writes manifest.json (file, version,
bytes, sha256, why), requirements.txt, and a size report against the transfer budget. On the target:

    python3 -m pip install --no-index --no-deps --find-links DIR --target TARGET -r DIR/requirements.txt
    export PYTHONPATH=TARGET PATH=TARGET/bin:$PATH

The procedure for an air-gapped GPU node, step by step: docs/GPU_NODES.md; this folder's README.md
says how the resolution works and what a bundle for the project's GPU node measured.
"""

