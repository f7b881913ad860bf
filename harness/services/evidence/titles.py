"""The pool-title check every evidence-reading method runs before training: one definition of
a row "without a title".

A pool row names its evidence articles in `title` (`;`-joined Wikipedia titles, docs/BASELINES.md
§1.4). A row is untitled when `split_titles(row.get("title"))` is empty: no key, None, an empty
or blank string, only separators (" ; "), or an empty list. That is the same rule the store uses
when it looks a row's articles up (`EvidenceStore.for_row`), so the check and the retrieval
never disagree about which rows have evidence.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from ...core.errors import DataError
from .store import split_titles


def untitled(row: Mapping[str, Any]) -> bool:
    """Whether the pool row names no evidence article (the module docstring's rule)."""
    return not split_titles(row.get("title"))


def check_pool_titles(rows: Iterable[Mapping[str, Any]], *, method: str, pool: str, purpose: str,
                      require_title: bool, require_any: bool = True,
                      without: str = "train those rows without a signal") -> int:
    """How many of `rows` are untitled, after two checks, each a one-line DataError:

    - `require_any`: a non-empty pool in which no row has a title (the method would get no
      evidence at all);
    - `require_title` (the method's `method.require_title`): any untitled row; the message
      names the first and offers `method.require_title=false`, which makes such rows `without`.

    `purpose` completes "method=<method> ..." (what the method does with the articles).
    """
    rows = list(rows)
    missing = [row for row in rows if untitled(row)]
    if require_any and rows and len(missing) == len(rows):
        raise DataError(f"pool={pool}: none of its {len(rows)} rows has a `title`; method={method} {purpose}: "
                        f"give the rows their `;`-joined Wikipedia titles (docs/BASELINES.md §1.4)")
    if require_title and missing:
        raise DataError(f"pool={pool}: {len(missing)} of {len(rows)} rows have no `title` (first: id "
                        f"{missing[0].get('id')!r}); method={method} {purpose}: give every row its `;`-joined "
                        f"Wikipedia titles, or set method.require_title=false to {without}")
    return len(missing)
