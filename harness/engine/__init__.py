"""The engine: the `harness` command, Hydra composition, runs, grids, sweeps and bundles.

It drives every layer below it and nothing below imports it (tests/core/test_import_graph.py;
docs/CONTRACTS.md, "Packages").
"""
