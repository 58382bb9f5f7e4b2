"""Recall statistics: `recall_count + 1` and `last_recalled_at = now` on the
returned rows of one table, in one commit.

The increment is an SQL update expression evaluated by LanceDB against the
version it commits, never a value read here and written back, so concurrent
searches cannot lose each other's increments (a read-modify-write lost 60 of
100 with 4 processes). On a local store a kernel lock per store serialises the
updates, so they never exhaust LanceDB's conflict retries; on object storage
LanceDB's optimistic concurrency re-runs a conflicting update on the newer
version.

`RecallLog` takes the writes off the query path: a search notes its recalls
and returns; a background thread (and the process's exit, and `flush()`)
writes them, one update per table for each recall count, every
`FLUSH_S`. A process killed between a search and the next flush loses those
recalls only (they weigh on decay, nothing else). Not every second: each
write is a new version of the tables the search's working set follows, and
the next search of every user then reads what it changed.

Each update leaves a small fragment (and deletion files) behind, which every
full read of the table opens (97 fragments took a LanceDB facts search from
23 ms to 62). So a flush that leaves a table with `COMPACT_AT` fragments or
more compacts it: rarely, because a compaction makes every user's next search
read that table's rows again (the working set cannot tell a compaction that
rewrote an index from a delete), while a plain update costs it one small
fragment's read.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import datetime

from storage import filters
from storage.codec import to_naive
from storage.db import Store
from storage.lease import file_lock

LOCK = "recall"
COMPACT_AT = 128  # fragments: about an hour of flushes under constant searching
FLUSH_S = 30.0
log = logging.getLogger(__name__)


def bump_recalls(
    store: Store,
    table: str,
    id_column: str,
    ids_by_user: Mapping[str, Sequence[str]],
    now: datetime,
    times: int = 1,
) -> int:
    """Add `times` recalls at `now` to each listed row of each user (the
    row's `id_column` in that user's ids; duplicates count once), in one
    commit; returns the number of rows updated. Each user's ids match that
    user's rows only."""
    if times < 1:
        raise ValueError(f"times must be >= 1, got {times}")
    parts = [
        filters.user_in(user_id, id_column, sorted(set(ids)))
        for user_id, ids in sorted(ids_by_user.items())
        if ids
    ]
    if not parts:
        return 0
    while len(parts) > 1:  # a balanced OR: LanceDB's SQL parser limits nesting depth
        parts = [a | b for a, b in zip(parts[::2], parts[1::2], strict=False)] + (
            [parts[-1]] if len(parts) % 2 else []
        )
    (where,) = parts
    stamp = to_naive(now)
    assert stamp is not None
    with file_lock(store.uri, LOCK):
        return store.update_where(
            table,
            where,
            {"last_recalled_at": stamp},
            {"recall_count": f"coalesce(recall_count, 0) + {int(times)}"},
        )


def compact_if_fragmented(store: Store, table: str, at: int = COMPACT_AT) -> bool:
    """Compact `table` (and fold its new rows into its indexes) when it has
    `at` fragments or more; versions are kept (readers may be on them) until
    the maintain flow's cleanup. A compaction that loses a commit race to
    another writer is skipped: the next flush tries again."""
    if store.fragments(table) < at:
        return False
    try:
        with file_lock(store.uri, LOCK):
            store.table(table).optimize()
    except Exception:
        log.warning("compacting %s skipped; the next flush retries", table)
        return False
    return True


_Key = tuple[str, str, str]  # table, id column, user


class RecallLog:
    """Recalls noted now and written within `interval_s`, grouped: every id
    recalled n times since the last write gets + n in one update, stamped
    with the latest of its window's recalls."""

    def __init__(
        self, store: Store, interval_s: float = FLUSH_S, compact_at: int = COMPACT_AT
    ) -> None:
        self.store = store
        self.interval_s = interval_s
        self.compact_at = compact_at
        self._pending: dict[_Key, dict[str, tuple[int, datetime]]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        atexit.register(self.flush)

    def note(
        self, table: str, id_column: str, user_id: str, ids: Sequence[str], now: datetime
    ) -> None:
        if not ids:
            return
        with self._lock:
            seen = self._pending.setdefault((table, id_column, user_id), {})
            for i in set(ids):
                n, last = seen.get(i, (0, now))
                seen[i] = (n + 1, max(last, now))
            # not alive: ended, or left behind by a fork of this process
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="episodic-recalls", daemon=True
                )
                self._thread.start()

    def pending(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._pending.values())

    def flush(self) -> int:
        """Write every noted recall now; returns the rows updated. What a
        failed write held is noted again for the next flush."""
        with self._lock:
            taken, self._pending = self._pending, {}
        written = 0
        touched: set[str] = set()
        # one commit per table and recall count, every user's rows in it: each
        # commit is a version the working set's followers read past
        groups: dict[tuple[str, str, int], dict[str, list[str]]] = {}
        for (table, id_column, user_id), seen in taken.items():
            for i, (n, _) in seen.items():
                groups.setdefault((table, id_column, n), {}).setdefault(user_id, []).append(i)
        for (table, id_column, n), by_user in sorted(groups.items()):
            stamp = max(
                taken[(table, id_column, u)][i][1] for u, ids in by_user.items() for i in ids
            )
            try:
                written += bump_recalls(self.store, table, id_column, by_user, stamp, n)
                touched.add(table)
            except Exception:
                log.warning("recalls of %d %s not written yet; retried", len(by_user), table)
                for u, ids in by_user.items():
                    key = (table, id_column, u)
                    self._requeue(key, {i: taken[key][i] for i in ids})
        for table in sorted(touched):
            compact_if_fragmented(self.store, table, self.compact_at)
        return written

    def _requeue(self, key: _Key, items: dict[str, tuple[int, datetime]]) -> None:
        with self._lock:
            seen = self._pending.setdefault(key, {})
            for i, (n, last) in items.items():
                m, other = seen.get(i, (0, last))
                seen[i] = (n + m, max(last, other))

    def _loop(self) -> None:
        """Flush every `interval_s` while there is something to write; the
        thread ends when idle and the next `note` starts another."""
        while True:
            time.sleep(self.interval_s)
            try:
                self.flush()
            except Exception:  # a bug must not leave recalls noted forever
                log.exception("recall writer")
            with self._lock:
                if not self._pending:
                    self._thread = None
                    return
