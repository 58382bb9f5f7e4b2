"""Forgetting: the one deliberate exception to "raw is immutable".

`USER_TABLES` is the one registry of tables that hold a user's rows (every
table of `schemas.TABLES`, the search documents, API keys, capture offsets,
ingest receipts and the model-use ledger); a test fails when the store has a
table with a `user_id` column that is not in it. `erase_user` deletes a
user's rows from each, then makes the deletion an erasure: a LanceDB delete
only hides rows from the newest version, so the text indexes are rebuilt and
every older version is cleaned up (`optimize(cleanup_older_than=0)`),
leaving no file that still holds them; a commit conflict with a concurrent
writer (a recall count) is retried.

`forget_audit` keeps one row per forget: when, who asked, what kind, a hash
of the target and per-table counts; never content.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

import pyarrow as pa
from lancedb.index import FTS, BTree

from episodic.models import now_utc, stable_id
from storage import filters, schemas
from storage.codec import to_naive
from storage.conflicts import on_conflict
from storage.db import FTS_COLUMNS, Store
from storage.keys import TABLE as KEYS_TABLE
from storage.ledger import TABLE as LEDGER_TABLE
from storage.offsets import TABLE as OFFSETS_TABLE
from storage.receipts import TABLE as RECEIPTS_TABLE

# the search documents of stores written before the search built them in
# memory: no longer written, erased with the rest
TURN_DOCS = "turn_docs"
USER_TABLES: tuple[str, ...] = (
    *schemas.TABLES,
    TURN_DOCS,
    KEYS_TABLE,
    OFFSETS_TABLE,
    RECEIPTS_TABLE,
    LEDGER_TABLE,
)
AUDIT = "forget_audit"
# the table config key of the commit that follows an erase
_PURGED = "episodic.purged_at"
# text indexes outside the registry's FTS_COLUMNS: rebuilt after an erase
_EXTRA_FTS = {TURN_DOCS: "doc"}


def audit_schema() -> pa.Schema:
    return pa.schema(
        [
            ("audit_id", pa.string()),
            ("at", pa.timestamp("us")),
            ("actor", pa.string()),
            ("kind", pa.string()),  # user | turn | episode | fact
            ("target", pa.string()),  # a hash of the user and the id, never the id's text
            ("counts", pa.string()),  # JSON: table -> rows removed or redacted
        ]
    )


def present(store: Store) -> list[str]:
    """The registry's tables that exist in this store."""
    have = set(store.db.list_tables().tables)
    return [name for name in USER_TABLES if name in have]


def erase_user(store: Store, user_id: str) -> dict[str, int]:
    """Delete every row of `user_id` from every user table; per-table counts."""
    cond = filters.user(user_id)
    return {name: store.delete(name, cond) for name in present(store)}


@on_conflict
def purge_versions(store: Store, names: Iterable[str]) -> None:
    """Make deletions erasures: rewrite every fragment that has deleted rows
    (a delete only marks them), rebuild the text index and the BTree
    indexes (an index keeps the tokens and values of deleted rows), and drop
    every older version. A
    version's files keep its transaction, and a delete's names its predicate
    (the user's id, a turn's id): one more commit that names nothing follows
    it, so the delete's version is an older one too."""
    tables = set(present(store))
    for name in (n for n in names if n in tables):
        tbl = store.db.open_table(name)
        tbl.to_lance().optimize.compact_files(
            materialize_deletions=True, materialize_deletions_threshold=0.0
        )
        column = FTS_COLUMNS.get(name) or _EXTRA_FTS.get(name)
        if column and any(tuple(ix.columns) == (column,) for ix in tbl.list_indices()):
            tbl.create_index(column, config=FTS(), replace=True)
        _rebuild_btrees(tbl)
        tbl.to_lance().update_config({_PURGED: now_utc().isoformat()})
        with warnings.catch_warnings():  # no older version may survive: that is the point
            warnings.simplefilter("ignore", UserWarning)
            # opened anew, at that commit: a cleanup keeps the version it runs from
            store.db.open_table(name).optimize(
                cleanup_older_than=timedelta(0), delete_unverified=True
            )


def record(
    store: Store, *, actor: str, kind: str, user_id: str, target: str, counts: Mapping[str, int]
) -> dict[str, Any]:
    """Append the audit row of one forget and return it (JSON-ready)."""
    now = now_utc()
    row = {
        "audit_id": stable_id("forget", user_id, kind, target, now.isoformat()),
        "at": to_naive(now),
        "actor": actor,
        "kind": kind,
        "target": stable_id("forgotten", user_id, target),
        "counts": json.dumps(dict(counts), sort_keys=True),
    }
    tbl = store.declared(AUDIT, audit_schema())
    tbl.add(pa.Table.from_pylist([row], schema=audit_schema()))
    return {**row, "at": now.isoformat(), "counts": dict(counts)}


def _rebuild_btrees(tbl: Any) -> None:
    """A BTree index keeps the values of deleted rows (the user's id, a
    turn's id) in its pages: built again from what is left, or dropped from
    an emptied table (`Store.keep_scalar_indexes` makes it anew on new rows)."""
    empty = tbl.count_rows() == 0
    for ix in tbl.list_indices():
        if ix.index_type != "BTree" or len(ix.columns) != 1:
            continue
        if empty:
            tbl.drop_index(ix.name)
        else:
            tbl.create_index(ix.columns[0], config=BTree(), replace=True)


def audit_rows(store: Store) -> list[dict[str, Any]]:
    tbl = store.declared(AUDIT, audit_schema())
    rows: list[dict[str, Any]] = tbl.search().limit(None).to_list()
    return [{**r, "counts": json.loads(r["counts"])} for r in rows]
