"""The training question pool: loading, validation, deduplication and fingerprint (load.py), its
settings (settings.py) and `harness pool filter` (filter.py, cli.py).
"""
from .load import (validate_rows, eval_questions, dedup_against, load_pool, rows_with_evidence,
    pool_fingerprint)

# This part's import layer (tests/core/test_import_graph.py reads it; docs/CONTRACTS.md, "Packages").
LAYER = "method runtime"

__all__ = ["validate_rows", "eval_questions", "dedup_against", "load_pool", "rows_with_evidence",
           "pool_fingerprint"]
