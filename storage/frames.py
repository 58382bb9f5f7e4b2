"""Column reads for analytics: a table's rows (of one user) as an Arrow table,
with only the columns asked for. Callers aggregate the Arrow table (or in
polars); nothing here builds domain objects."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from storage import filters
from storage.db import Store

MAX_ROWS = 100_000_000
# tables whose rows make a user known (their input quarantined whole counts:
# `episodic rejected` must list it); the registry of every table holding a
# user's rows is storage/forget.py's USER_TABLES
KNOWN_BY = ("streams", "raw_turns", "rejected_input", "episodes", "facts", "reflections")


def frame(
    store: Store, table: str, user_id: str | None = None, columns: Sequence[str] | None = None
) -> pa.Table:
    """Rows of `table` (of one user when given), `columns` only when given."""
    q = store.table(table).search()
    if user_id is not None:
        q = q.where(filters.user(user_id).lance)
    if columns is not None:
        q = q.select(list(columns))
    tbl: pa.Table = q.limit(MAX_ROWS).to_arrow()
    return tbl


def user_exists(store: Store, user_id: str) -> bool:
    """True when the user has a row in any table that makes a user known."""
    cond = filters.user(user_id)
    return any(store.count(name, cond) > 0 for name in KNOWN_BY)
