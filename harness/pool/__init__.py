"""The training question pool: loading, validation, deduplication and fingerprint (load.py), its
settings (settings.py) and `harness pool filter` (filter.py, cli.py).
"""
from .load import (validate_rows, eval_questions, dedup_against, load_pool, rows_with_evidence,
    pool_fingerprint)


__all__ = ["validate_rows", "eval_questions", "dedup_against", "load_pool", "rows_with_evidence",
           "pool_fingerprint"]
