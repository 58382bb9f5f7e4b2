"""Follow one user's rows of one table without reading them again: after the
first read, a poll reads only the fragments the table gained since (appends,
rows rewritten by an update or a merge, compacted fragments), whose rows
replace the kept rows of the same id. Anything that can remove a row without
rewriting it elsewhere (a delete, an overwrite, a restore, an in-place column
rewrite, a version no longer on disk) makes the poll read the user's rows whole.

Three small reads decide it: the table's version, its fragment list and the
transactions in between (about a millisecond in all)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from storage import filters
from storage.db import Store

# transactions after which the rows of the new fragments are all that changed
_ADDING = frozenset(
    {"Append", "Update", "Rewrite", "CreateIndex", "UpdateConfig", "ReserveFragments"}
)


SCAN_BATCH = 1024  # rows per batch of a follower's read


@dataclass(frozen=True)
class Delta:
    rows: pa.Table  # the user's rows of the fragments new since the last poll
    whole: bool  # `rows` are all the user's rows: drop what was kept before


@dataclass
class Follower:
    """One user's rows of `table` (its `columns`, those matching `where`)."""

    store: Store
    table: str
    where: filters.Cond
    columns: Sequence[str]
    version: int | None = None
    _fragments: frozenset[int] = field(default_factory=frozenset)
    _ds: Any = None

    def poll(self) -> Delta | None:
        """What changed since the last poll; None when the table did not change."""
        if self._ds is not None and self._ds.latest_version == self.version:
            return None  # a third of the cost of moving the table to its newest version
        ds = self._ds = self.store.dataset(self.store.table(self.table))
        if ds.version == self.version:
            return None
        frags = {f.fragment_id: f for f in ds.get_fragments()}
        whole = self.version is None or not self._only_added(ds)
        todo = (
            list(frags.values())
            if whole
            else [f for i, f in frags.items() if i not in self._fragments]
        )
        rows = self._read(ds, todo)
        self.version, self._fragments = int(ds.version), frozenset(frags)
        return Delta(rows, whole)

    def _only_added(self, ds: Any) -> bool:
        try:
            txs = ds.delta(begin_version=self.version, end_version=ds.version).list_transactions()
        except (OSError, ValueError, RuntimeError):  # the old version was cleaned up
            return False
        except TypeError:  # pylance cannot build some operations (an index rewritten by optimize)
            return False
        for tx in txs:
            op = tx.operation
            if type(op).__name__ not in _ADDING:
                return False
            if getattr(op, "update_mode", "rewrite_rows") != "rewrite_rows":
                return False
        return True

    def _read(self, ds: Any, fragments: list[Any]) -> pa.Table:
        names = list(self.columns)
        if not fragments:
            return ds.schema.empty_table().select(names)
        # small batches: with the default ones a user's 10,000 vectors (15 MB)
        # peaked +30-45 MB in the scan, with these +18 (and read no slower)
        scan = ds.scanner(
            fragments=fragments, filter=self.where.arrow, columns=names, batch_size=SCAN_BATCH
        )
        return scan.to_table()
