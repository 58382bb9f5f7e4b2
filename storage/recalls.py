"""Recall statistics: `recall_count + 1` and `last_recalled_at = now` on the
returned rows of one table, in one commit.

The increment is an SQL update expression evaluated by LanceDB against the
version it commits, never a value read here and written back, so concurrent
searches cannot lose each other's increments (a read-modify-write lost 60 of
100 with 4 processes). On a local store a kernel lock per store serialises the
updates, so they never exhaust LanceDB's conflict retries; on object storage
LanceDB's optimistic concurrency re-runs a conflicting update on the newer
version."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from lancedb import lit

from storage import filters
from storage.codec import to_naive
from storage.db import Store
from storage.lease import file_lock

LOCK = "recall"


def bump_recalls(
    store: Store, table: str, id_column: str, user_id: str, ids: Sequence[str], now: datetime
) -> int:
    """Add one recall at `now` to each of the user's rows whose `id_column` is
    in `ids` (duplicates count once); returns the number of rows updated."""
    unique = sorted(set(ids))
    if not unique:
        return 0
    stamp = to_naive(now)
    assert stamp is not None
    tbl = store.table(table)
    where = filters.user_in(user_id, id_column, unique)
    values = {
        "recall_count": "coalesce(recall_count, 0) + 1",
        "last_recalled_at": filters.sql(lit(stamp)),
    }
    with file_lock(store.uri, LOCK):
        result = tbl.update(where=where, values_sql=values)
    return int(result.rows_updated)
