"""factrl-harness core: CLI, config, run orchestration, method registry, models, timer,
training engine and the corpus co-occurrence service."""

# This part's import layer (tests/core/test_import_graph.py reads it; docs/CONTRACTS.md, "Packages").
LAYER = "foundation"

__version__ = "0.1.0"
