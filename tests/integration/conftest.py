"""The integration tests reuse the KnowRL tests' evidence store (two articles, SQLite FTS5)."""
from tests.knowrl.conftest import store_path  # noqa: F401  (a pytest fixture)
