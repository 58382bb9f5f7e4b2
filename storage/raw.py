"""The immutable raw log. Rows are appended, never updated or deleted;
`merge_insert` on `turn_id` makes a second ingest of the same source a no-op.

Each stream has a head row in `streams` (last seq, turn count) so polls never
scan raw. Two tables cannot share a commit, so the head is written after the
rows; a process that dies in between leaves a head behind raw. The head is
therefore derived data, checked against raw where it matters:

- an append, under the append lock, first looks for rows above the heads of
  the streams it touches (one indexed query; none in the normal case) and
  repairs a stale head to the true max before handing out a seq, also when
  every turn of the batch is a duplicate (the re-ingest after a crash);
- `streams()` compares the raw row count with the heads' turn counts and
  repairs from a scan of raw when they differ (a crash, then no new append).
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa

from episodic.crashpoints import crashpoint
from episodic.models import Rejected, Turn, TurnIn, now_utc, stable_id
from storage import filters
from storage.codec import from_row, to_aware, to_row
from storage.db import Store
from storage.lease import file_lock
from storage.rows import StreamHead as StreamHead
from storage.rows import stream_key as stream_key
from storage.stored_ids import StoredIds


@dataclass
class AppendResult:
    accepted: int = 0
    duplicates: int = 0
    rejected: int = 0
    turn_ids: list[str] = field(default_factory=list)

    def merge(self, other: AppendResult) -> None:
        self.accepted += other.accepted
        self.duplicates += other.duplicates
        self.rejected += other.rejected
        self.turn_ids.extend(other.turn_ids)


@dataclass(frozen=True)
class HeadRepair:
    """A head rewritten from raw; `before` is None when the stream had no head."""

    before: StreamHead | None
    after: StreamHead

    def as_dict(self) -> dict[str, object]:
        b = self.before
        return {
            "user_id": self.after.user_id,
            "stream_id": self.after.stream_id,
            "head_seq": [b.head_seq if b else None, self.after.head_seq],
            "n_turns": [b.n_turns if b else None, self.after.n_turns],
        }


StreamKey = tuple[str, str]
MAX_ROWS = 100_000_000
STREAMS_PER_CHECK = 1000  # streams per count when checking heads


def append_lock(db_uri: str) -> AbstractContextManager[bool]:
    """One appender at a time per local store, across threads and processes.
    Object storage has no shared lock here: one ingest process per store there."""
    return file_lock(db_uri, "raw-append")


class RawLog:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.turns = store.table("raw_turns")
        self.heads = store.table("streams")
        self.rejects = store.table("rejected_input")
        self.stored = StoredIds(store)
        # raw's and the heads' versions after this process's last append: a
        # stale head needs another writer (or a restore), which moves one
        self._heads_true_at: tuple[int, int] | None = None

    # ---- writes -------------------------------------------------------
    def append(self, items: Iterable[TurnIn]) -> AppendResult:
        """Append one batch; seq continues each stream's head. Call with batches
        of a few thousand: one write per batch keeps fragments few."""
        # seqs come from the stream heads: two appenders reading the same head
        # would hand out the same seqs (seen: 30 rows, 15 distinct seqs)
        with append_lock(self.store.uri):
            return self._append(items)

    def _append(self, items: Iterable[TurnIn]) -> AppendResult:
        batch = list(items)
        result = AppendResult()
        if not batch:
            return result
        # the same turn twice inside one batch counts once
        unique: dict[str, TurnIn] = {}
        for t in batch:
            if t.turn_id in unique:
                result.duplicates += 1
            else:
                unique[t.turn_id] = t
        existing = self.existing_ids(list(unique))
        fresh = [t for tid, t in unique.items() if tid not in existing]
        result.duplicates += len(unique) - len(fresh)
        # also when every turn is a duplicate: that is the re-ingest after a crash
        keys = {(t.user_id, t.stream_id) for t in unique.values()}
        if self._versions() == self._heads_true_at:
            heads = self._heads_for(keys)  # neither table changed since our own append
        else:
            heads = self._checked_heads(keys)
        if not fresh:
            self._heads_true_at = self._versions()
            return result
        now = now_utc()
        rows: list[dict[str, object]] = []
        new_heads: dict[tuple[str, str], StreamHead] = {}
        for t in fresh:
            key = (t.user_id, t.stream_id)
            head = new_heads.get(key) or heads.get(key)
            seq = head.head_seq + 1 if head else 0
            n = head.n_turns + 1 if head else 1
            last = head.last_event_ts if head else None
            if last is None or t.event_ts > last:
                last = t.event_ts
            new_heads[key] = StreamHead(t.user_id, t.stream_id, seq, n, last)
            rows.append(
                to_row(
                    Turn(
                        turn_id=t.turn_id,
                        user_id=t.user_id,
                        stream_id=t.stream_id,
                        seq=seq,
                        role=t.role,
                        kind=t.kind,
                        text=t.text,
                        event_ts=t.event_ts,
                        ingest_ts=now,
                        source=t.source,
                        position=t.position,
                        meta=t.meta,
                    ),
                    self.store.dim,
                )
            )
        crashpoint("append_before_raw")
        self.store.insert_new("raw_turns", rows)
        crashpoint("append_after_raw")  # rows committed, heads not: the stale-head window
        self._write_heads(new_heads.values())
        # under the append lock nobody else appended in between: raw and the
        # heads at these versions agree, so the next append need not count
        self._heads_true_at = self._versions()
        crashpoint("append_after_heads")
        result.accepted = len(rows)
        result.turn_ids = [str(r["turn_id"]) for r in rows]
        return result

    def quarantine(self, rejected: Iterable[Rejected]) -> int:
        now = now_utc()
        rows = [
            to_row(
                r,
                self.store.dim,
                reject_id=stable_id("reject", r.source, r.line_no, r.reason, r.raw[:4096]),
                at=now,
            )
            for r in rejected
        ]
        self.store.insert_new("rejected_input", rows)
        return len(rows)

    def existing_ids(self, turn_ids: list[str]) -> set[str]:
        """Which of `turn_ids` raw holds (ids are scoped by user in their hash);
        only those the in-memory index cannot rule out are looked up."""
        maybe = self.stored.maybe(turn_ids)
        if not maybe:
            return set()
        rows = self.store.where_in("raw_turns", "turn_id", maybe, columns=["turn_id"])
        return {str(r["turn_id"]) for r in rows}

    def _versions(self) -> tuple[int, int]:
        return int(self.turns.version), int(self.heads.version)

    def _heads_for(self, keys: set[StreamKey]) -> dict[StreamKey, StreamHead]:
        ids = sorted(stream_key(u, s) for u, s in keys)
        heads = (self._head(r) for r in self.store.where_in("streams", "key", ids))
        return {(h.user_id, h.stream_id): h for h in heads}

    def _checked_heads(self, keys: set[StreamKey]) -> dict[StreamKey, StreamHead]:
        """The heads of `keys`, each repaired first if raw holds more rows than
        its turn count says (a writer died between its two commits). One
        indexed count per user and STREAMS_PER_CHECK streams; the rows are
        read only when a count disagrees. Call under the append lock."""
        heads = self._heads_for(keys)
        by_user: dict[str, list[str]] = {}
        for u, s in sorted(keys):
            by_user.setdefault(u, []).append(s)
        fixed: list[StreamHead] = []
        for u, streams in by_user.items():
            for i in range(0, len(streams), STREAMS_PER_CHECK):
                chunk = streams[i : i + STREAMS_PER_CHECK]
                cond = filters.user_in(u, "stream_id", chunk)
                expected = sum(heads[(u, s)].n_turns for s in chunk if (u, s) in heads)
                if self.store.count("raw_turns", cond) == expected:
                    continue
                for h in self._heads_from_raw(cond).values():
                    old = heads.get((h.user_id, h.stream_id))
                    if old is None or (old.head_seq, old.n_turns) != (h.head_seq, h.n_turns):
                        fixed.append(h)
        if fixed:
            self._write_heads(fixed)
            heads.update({(h.user_id, h.stream_id): h for h in fixed})
        return heads

    def _heads_from_raw(self, cond: Any) -> dict[StreamKey, StreamHead]:
        """True heads of the streams matching `cond`, from their rows."""
        tbl = (
            self.turns.search()
            .where(cond.lance)
            .select(["user_id", "stream_id", "seq", "event_ts"])
            .limit(MAX_ROWS)
            .to_arrow()
        )
        return {
            k: StreamHead(k[0], k[1], st.max_seq, st.rows, st.last_event_ts)
            for k, st in stream_stats_of(tbl).items()
        }

    def repair_heads(self, user_id: str | None = None) -> list[HeadRepair]:
        """Rewrite every head (of one user, or all) that disagrees with raw:
        head_seq the max seq, n_turns the row count. Scans raw: for `doctor`
        and for `streams()` after it saw a mismatch, not for every append."""
        with append_lock(self.store.uri):
            return self._repair_heads(user_id)

    def _repair_heads(self, user_id: str | None) -> list[HeadRepair]:
        stats = self.stream_stats(user_id)
        stored = {(h.user_id, h.stream_id): h for h in self.stored_heads(user_id)}
        repairs: list[HeadRepair] = []
        for key, st in sorted(stats.items()):
            true = StreamHead(key[0], key[1], st.max_seq, st.rows, st.last_event_ts)
            before = stored.get(key)
            if before is None or (before.head_seq, before.n_turns) != (true.head_seq, true.n_turns):
                repairs.append(HeadRepair(before, true))
        for key, h in sorted(stored.items()):
            if key not in stats and (h.head_seq, h.n_turns) != (-1, 0):
                # a head with no rows at all: nothing was ever stored for it
                repairs.append(HeadRepair(h, StreamHead(h.user_id, h.stream_id, -1, 0, None)))
        if repairs:
            self._write_heads(r.after for r in repairs)
        return repairs

    def _write_heads(self, heads: Iterable[StreamHead]) -> None:
        now = now_utc()
        self.store.upsert("streams", [to_row(h, self.store.dim, updated_at=now) for h in heads])

    # ---- reads --------------------------------------------------------
    @staticmethod
    def _head(r: dict[str, object]) -> StreamHead:
        return from_row(StreamHead, r)

    def streams(self, user_id: str | None = None) -> list[StreamHead]:
        """Every stream head (of one user), checked against raw's row count:
        a head left behind by a dead writer is repaired before it is read."""
        heads = self.stored_heads(user_id)
        # heads first, then the count: an append in between makes the count
        # larger, which only costs a needless check under the lock
        if self.count(user_id) != sum(h.n_turns for h in heads):
            if self.repair_heads(user_id):
                heads = self.stored_heads(user_id)
        return heads

    def stored_heads(self, user_id: str | None = None) -> list[StreamHead]:
        """The head rows as stored, unchecked (`doctor` compares them with raw)."""
        q = self.heads.search()
        if user_id is not None:
            q = q.where(filters.user(user_id).lance)
        rows = q.limit(MAX_ROWS).to_list()
        return sorted((self._head(r) for r in rows), key=lambda h: (h.user_id, h.stream_id))

    def stream_stats(self, user_id: str | None = None) -> dict[StreamKey, StreamStats]:
        """Per stream, from raw itself: rows, max seq, the seqs missing below
        the max and those stored twice. Scans raw's seq column."""
        return stream_stats_of(self.seq_table(user_id))

    def seq_table(self, user_id: str | None = None) -> pa.Table:
        """turn_id, user_id, stream_id, seq and event_ts of every row (of one user)."""
        q = self.turns.search()
        if user_id is not None:
            q = q.where(filters.user(user_id).lance)
        cols = ["turn_id", "user_id", "stream_id", "seq", "event_ts"]
        return q.select(cols).limit(MAX_ROWS).to_arrow()

    def read(self, user_id: str, stream_id: str, after: int, upto: int) -> list[Turn]:
        """Turns with after < seq <= upto, in seq order."""
        if upto <= after:
            return []
        rows = (
            self.turns.search()
            .where(filters.seq_range(user_id, stream_id, after, upto).lance)
            .limit(upto - after + 1)
            .to_list()
        )
        turns = [self._turn(r) for r in rows]
        turns.sort(key=lambda t: t.seq)
        return turns

    def by_ids(self, user_id: str, turn_ids: list[str]) -> list[Turn]:
        rows = self.store.where_in("raw_turns", "turn_id", turn_ids, user_id=user_id)
        return sorted((self._turn(r) for r in rows), key=lambda t: (t.stream_id, t.seq))

    def count(self, user_id: str | None = None) -> int:
        if user_id is None:
            return int(self.turns.count_rows())
        return self.store.count("raw_turns", filters.user(user_id))

    def rejected(self, user_id: str | None = None) -> list[dict[str, object]]:
        q = self.rejects.search()
        if user_id is not None:
            q = q.where(filters.user(user_id).lance)
        return list(q.limit(100_000).to_list())

    @staticmethod
    def _turn(r: dict[str, object]) -> Turn:
        return from_row(Turn, r)


@dataclass(frozen=True)
class StreamStats:
    rows: int
    max_seq: int
    seqs_twice: list[int]
    seqs_missing: list[int]
    last_event_ts: datetime | None


def stream_stats_of(tbl: pa.Table) -> dict[StreamKey, StreamStats]:
    """Per stream of a table with user_id, stream_id, seq and event_ts."""
    out: dict[StreamKey, StreamStats] = {}
    if tbl.num_rows == 0:
        return out
    grouped = tbl.group_by(["user_id", "stream_id"]).aggregate(
        [("seq", "list"), ("event_ts", "max")]
    )
    for row in grouped.to_pylist():
        seqs = sorted(int(x) for x in row["seq_list"])
        distinct = sorted(set(seqs))
        twice = sorted({a for a, b in zip(seqs, seqs[1:], strict=False) if a == b})
        top = distinct[-1]
        missing = sorted(set(range(top + 1)) - set(distinct)) if len(distinct) <= top else []
        out[(str(row["user_id"]), str(row["stream_id"]))] = StreamStats(
            rows=len(seqs),
            max_seq=top,
            seqs_twice=twice,
            seqs_missing=missing,
            last_event_ts=to_aware(row["event_ts_max"]),
        )
    return out
