"""The immutable raw log. Rows are appended, never updated or deleted;
`merge_insert` on `turn_id` makes a second ingest of the same source a no-op."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime

import pyarrow as pa

from episodic.models import Rejected, Turn, TurnIn, now_utc, stable_id
from storage import filters
from storage.codec import dumps, loads, to_aware, to_naive
from storage.db import Store
from storage.lease import file_lock
from storage.schemas import raw_turns as raw_schema
from storage.schemas import rejected_input as rejected_schema
from storage.schemas import streams as streams_schema


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
class StreamHead:
    user_id: str
    stream_id: str
    head_seq: int
    n_turns: int
    last_event_ts: datetime | None


def stream_key(user_id: str, stream_id: str) -> str:
    return stable_id("stream", user_id, stream_id)


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
        existing = self._existing_ids(list(unique))
        fresh = [t for tid, t in unique.items() if tid not in existing]
        result.duplicates += len(unique) - len(fresh)
        if not fresh:
            return result
        now = to_naive(now_utc())
        heads = {(h.user_id, h.stream_id): h for h in self._heads_for(fresh)}
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
                {
                    "turn_id": t.turn_id,
                    "user_id": t.user_id,
                    "stream_id": t.stream_id,
                    "seq": seq,
                    "role": t.role,
                    "kind": t.kind,
                    "text": t.text,
                    "event_ts": to_naive(t.event_ts),
                    "ingest_ts": now,
                    "source": t.source,
                    "position": t.position,
                    "meta": dumps(t.meta),
                }
            )
        data = pa.Table.from_pylist(rows, schema=raw_schema())
        (self.turns.merge_insert("turn_id").when_not_matched_insert_all().execute(data))
        self._write_heads(new_heads.values())
        result.accepted = len(rows)
        result.turn_ids = [str(r["turn_id"]) for r in rows]
        return result

    def quarantine(self, rejected: Iterable[Rejected]) -> int:
        now = to_naive(now_utc())
        rows = [
            {
                "reject_id": stable_id("reject", r.source, r.line_no, r.reason, r.raw[:4096]),
                "user_id": r.user_id,
                "stream_id": r.stream_id,
                "source": r.source,
                "line_no": r.line_no,
                "reason": r.reason,
                "raw": r.raw,
                "at": now,
            }
            for r in rejected
        ]
        if not rows:
            return 0
        data = pa.Table.from_pylist(rows, schema=rejected_schema())
        self.rejects.merge_insert("reject_id").when_not_matched_insert_all().execute(data)
        return len(rows)

    def _existing_ids(self, turn_ids: list[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(turn_ids), 1000):
            chunk = turn_ids[i : i + 1000]
            rows = (
                self.turns.search()
                .where(filters.within("turn_id", chunk))
                .select(["turn_id"])
                .limit(len(chunk) + 1)
                .to_list()
            )
            found.update(r["turn_id"] for r in rows)
        return found

    def _heads_for(self, turns: list[TurnIn]) -> list[StreamHead]:
        keys = sorted({stream_key(t.user_id, t.stream_id) for t in turns})
        rows = self.heads.search().where(filters.within("key", keys)).limit(len(keys) + 1).to_list()
        return [self._head(r) for r in rows]

    def _write_heads(self, heads: Iterable[StreamHead]) -> None:
        now = to_naive(now_utc())
        rows = [
            {
                "key": stream_key(h.user_id, h.stream_id),
                "user_id": h.user_id,
                "stream_id": h.stream_id,
                "head_seq": h.head_seq,
                "n_turns": h.n_turns,
                "last_event_ts": to_naive(h.last_event_ts),
                "updated_at": now,
            }
            for h in heads
        ]
        data = pa.Table.from_pylist(rows, schema=streams_schema())
        (
            self.heads.merge_insert("key")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(data)
        )

    # ---- reads --------------------------------------------------------
    @staticmethod
    def _head(r: dict[str, object]) -> StreamHead:
        return StreamHead(
            user_id=str(r["user_id"]),
            stream_id=str(r["stream_id"]),
            head_seq=int(r["head_seq"]),  # type: ignore[call-overload]
            n_turns=int(r["n_turns"]),  # type: ignore[call-overload]
            last_event_ts=to_aware(r["last_event_ts"]),
        )

    def streams(self, user_id: str | None = None) -> list[StreamHead]:
        q = self.heads.search()
        if user_id is not None:
            q = q.where(filters.user(user_id))
        rows = q.limit(1_000_000).to_list()
        return sorted((self._head(r) for r in rows), key=lambda h: (h.user_id, h.stream_id))

    def read(self, user_id: str, stream_id: str, after: int, upto: int) -> list[Turn]:
        """Turns with after < seq <= upto, in seq order."""
        if upto <= after:
            return []
        rows = (
            self.turns.search()
            .where(filters.seq_range(user_id, stream_id, after, upto))
            .limit(upto - after + 1)
            .to_list()
        )
        turns = [self._turn(r) for r in rows]
        turns.sort(key=lambda t: t.seq)
        return turns

    def by_ids(self, user_id: str, turn_ids: list[str]) -> list[Turn]:
        if not turn_ids:
            return []
        out: list[Turn] = []
        for i in range(0, len(turn_ids), 1000):
            chunk = turn_ids[i : i + 1000]
            rows = (
                self.turns.search()
                .where(filters.user_in(user_id, "turn_id", chunk))
                .limit(len(chunk) + 1)
                .to_list()
            )
            out.extend(self._turn(r) for r in rows)
        out.sort(key=lambda t: (t.stream_id, t.seq))
        return out

    def count(self, user_id: str | None = None) -> int:
        if user_id is None:
            return int(self.turns.count_rows())
        return int(self.turns.count_rows(filters.sql(filters.user(user_id))))

    def rejected(self, user_id: str | None = None) -> list[dict[str, object]]:
        q = self.rejects.search()
        if user_id is not None:
            q = q.where(filters.user(user_id))
        return list(q.limit(100_000).to_list())

    @staticmethod
    def _turn(r: dict[str, object]) -> Turn:
        return Turn(
            turn_id=str(r["turn_id"]),
            user_id=str(r["user_id"]),
            stream_id=str(r["stream_id"]),
            seq=int(r["seq"]),  # type: ignore[call-overload]
            role=r["role"],  # type: ignore[arg-type]
            kind=r["kind"],  # type: ignore[arg-type]
            text=str(r["text"]),
            event_ts=to_aware(r["event_ts"]),  # type: ignore[arg-type]
            ingest_ts=to_aware(r["ingest_ts"]),  # type: ignore[arg-type]
            source=str(r["source"]),
            meta=loads(str(r["meta"]), {}),
        )
