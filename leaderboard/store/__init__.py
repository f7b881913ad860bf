"""The leaderboard store: the SQLite file and its transactions (database.py), the row schema and
records (schema.py, rows.py), the versions and their frozen fields (versions.py), the derived
per-question fields (outcomes.py, behaviour.py) and one-line SQLite errors (errors.py).
"""
# BUSY_TIMEOUT_S is not re-exported: it is read in database.py, so that is where it is set.
from .database import STORE_SCHEMA, RowRefused, AddReport, Store, strip_private

__all__ = ["STORE_SCHEMA", "RowRefused", "AddReport", "Store", "strip_private"]
