"""Column reads for analytics: a table's rows (of one user) as an Arrow table,
with only the columns asked for. Callers aggregate the Arrow table (or in
polars); nothing here builds domain objects."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from storage import filters
from storage.db import Store

MAX_ROWS = 100_000_000
# tables a user's memory lives in: a user with a row in none is unknown
USER_TABLES = ("streams", "raw_turns", "episodes", "facts", "reflections")


def frame(
    store: Store, table: str, user_id: str | None = None, columns: Sequence[str] | None = None
) -> pa.Table:
    """Rows of `table` (of one user when given), `columns` only when given."""
    q = store.table(table).search()
    if user_id is not None:
        q = q.where(filters.user(user_id))
    if columns is not None:
        q = q.select(list(columns))
    tbl: pa.Table = q.limit(MAX_ROWS).to_arrow()
    return tbl


def user_exists(store: Store, user_id: str) -> bool:
    """True when the user has a row in any table their memory lives in."""
    cond = filters.sql(filters.user(user_id))
    return any(store.table(name).count_rows(cond) > 0 for name in USER_TABLES)
