"""Evidence store: Wikipedia passages in SQLite with FTS5, retrieved by title and by BM25.

Public API (docs/CONTRACTS.md, "Evidence store"):
- `build_store(source, out, *, tokenizer, passage_tokens, text_field, title_field, force)
  -> Manifest`; `ensure_demo_store() -> Path`; `demo_store_path()`;
- `open_store(path) -> EvidenceStore` with `by_title`, `search`, `for_row`, `stats()`,
  `describe()`, `manifest_hash`, `close()`; `open_evidence(cfg)` for a configs/evidence node;
- `Passage(passage_id, title, text, score)`, `split_titles`, `read_manifest`;
- `check_pool_titles(rows, *, method, pool, purpose, ...)`, `untitled(row)`: the one pool-title
  check of the methods that read evidence (titles.py).
Importing this package loads neither transformers nor tqdm; building does.
"""
from .build import build_store, demo_store_path, ensure_demo_store
from .fts import QUERY_RULE_VERSION, match_any, match_title, query_terms
from .passages import DEFAULT_TOKENIZER, SPLIT_VERSION
from .schema import FORMAT_VERSION, Manifest, read_manifest
from .store import RETRIEVAL_VERSION, EvidenceStore, Passage, open_evidence, open_store, split_titles
from .titles import check_pool_titles, untitled


__all__ = [
    "DEFAULT_TOKENIZER", "FORMAT_VERSION", "QUERY_RULE_VERSION", "RETRIEVAL_VERSION", "SPLIT_VERSION",
    "EvidenceStore", "Manifest", "Passage", "build_store", "check_pool_titles", "demo_store_path",
    "ensure_demo_store", "match_any", "match_title", "open_evidence", "open_store", "query_terms", "read_manifest",
    "split_titles", "untitled",
]
