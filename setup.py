"""Package mapping: the repository's top-level folders install under one import root.

The repository keeps the product's folders (harness/, evals/, methods/, leaderboard/,
configs/) at the top level; installed, they live under `factrl.*` so the project never
claims generic names such as `evals` (OpenAI's package on PyPI). Sub-packages are found
at build time, so a new `methods/<name>/` folder needs no edit here.
"""
from setuptools import find_packages, setup

FOLDERS = {
    "factrl.harness": "harness",
    "factrl.evals": "evals",
    "factrl.methods": "methods",
    "factrl.leaderboard": "leaderboard",
    "factrl.configs": "configs",
}

packages = []
package_dir = {}
for package, folder in FOLDERS.items():
    packages.append(package)
    package_dir[package] = folder
    for sub in find_packages(folder):
        packages.append(f"{package}.{sub}")

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={"factrl.configs": ["*.yaml", "**/*.yaml"], "factrl.methods": ["*/*.yaml", "*/*.md"],
                  "factrl.leaderboard": ["*.md", "templates/*", "reported/*.yaml"]},
    include_package_data=True,
)
