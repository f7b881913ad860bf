"""The foundation's helpers: errors, settings, the method interface, the name registry, answer
rules, run directories, hashing, locks and the timer.

A layer is a folder (tests/core/test_import_graph.py reads it from here): core/ and services/ are
the foundation that evals/, methods/, leaderboard/ and the plugins stand on; harness/training/,
pool/ and probe/ are the method runtime; engine/ is the roof. docs/CONTRACTS.md, "Packages".
"""
