"""Turns that arrive live (HTTP API, MCP `remember`, Python `add`): checked
by the one ingest validator (`check`), then acknowledged by a writer with a
receipt; refusals quarantined as file ingest does. Nothing is embedded here:
consolidate does.

A group commit (`storage.group`): many threads call `GroupWriter.commit`; one
of them appends everything queued so far in a single `RawLog.append` while
the others wait, so N concurrent batches cost about one LanceDB commit, not N
commits in turn under the append lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from episodic.ingest.common import raw_of
from episodic.ingest.jsonl import parse_objects
from episodic.models import Rejected, TurnIn, now_utc
from episodic.service.views import AddReceipt, Rejection
from storage.group import GroupCommit
from storage.raw import RawLog
from storage.receipts import Receipts

MAX_GROUP = 20_000  # turns per group append


@dataclass(frozen=True)
class Draft:
    """One add, checked, before its counts are known."""

    user_id: str
    ingest_id: str
    idempotency: str  # key_hash of the caller's key, or ""
    turns: list[TurnIn]
    rejects: list[Rejected]
    request: str = ""  # with a key: a fingerprint of what was sent (`request_print`)

    def kept(self, receipt: AddReceipt) -> dict[str, Any]:
        """The answer as stored for a retry: with the request's fingerprint."""
        answer = receipt.as_json()
        return answer | {"request": self.request} if self.request else answer

    def receipt(self, accepted: int, duplicates: int) -> AddReceipt:
        """The answer, once its counts are known (whichever writer decides them)."""
        return AddReceipt(
            accepted=accepted,
            duplicates=duplicates,
            rejected=[Rejection(index=r.line_no, reason=r.reason) for r in self.rejects],
            turn_ids=[t.turn_id for t in self.turns],
            ingest_id=self.ingest_id,
        )


def request_print(turns: Sequence[Any]) -> str:
    """What an add sent, as a fingerprint: one key, one request."""
    import hashlib
    import json

    sent = [t.model_dump(mode="json") if hasattr(t, "model_dump") else t for t in turns]
    return hashlib.sha256(json.dumps(sent, sort_keys=True, default=str).encode()).hexdigest()


class GroupWriter:
    """Acknowledges an add after its turns and its receipt are committed to
    LanceDB (two group commits). `JournaledWriter` is the faster twin: it
    acknowledges after one fsync of a journal record."""

    def __init__(self, raw: RawLog, receipts: Receipts, max_group: int = MAX_GROUP) -> None:
        self.raw = raw
        self.receipts = receipts
        self._group: GroupCommit[list[TurnIn], tuple[int, int]] = GroupCommit(
            self._append, max_group
        )

    def first_answer(self, user_id: str, key: str) -> dict[str, Any] | None:
        stored = self.receipts.by_key(user_id, key)
        return stored.answer if stored is not None else None

    def pending_texts(self, turn_ids: Sequence[str]) -> dict[str, str]:
        return {}  # nothing waits outside LanceDB

    def settle(self, user_id: str | None = None) -> None:
        return None

    def close(self) -> None:
        return None

    def commit(self, draft: Draft) -> AddReceipt:
        if draft.rejects:
            self.raw.quarantine(draft.rejects)
        receipt = draft.receipt(*self.write(draft.turns))
        self.receipts.insert_grouped(
            self.receipts.row(
                draft.user_id,
                draft.ingest_id,
                draft.idempotency,
                receipt.turn_ids,
                draft.kept(receipt),
            )
        )
        return receipt

    def write(self, turns: list[TurnIn]) -> tuple[int, int]:
        """(accepted, duplicates) of `turns`, once they are committed to raw."""
        if not turns:
            return 0, 0
        return self._group.submit(turns, len(turns))

    def _append(self, batches: Sequence[list[TurnIn]]) -> list[tuple[int, int]]:
        result = self.raw.append([t for b in batches for t in b])
        fresh = set(result.turn_ids)
        out = []
        for b in batches:  # the first sender of a turn id gets it; later ones are duplicates
            accepted = 0
            for t in b:
                if t.turn_id in fresh:
                    fresh.discard(t.turn_id)
                    accepted += 1
            out.append((accepted, len(b) - accepted))
        return out


class Writer(Protocol):
    """How an add is acknowledged: `GroupWriter` or `JournaledWriter`."""

    raw: RawLog

    def first_answer(self, user_id: str, key: str) -> dict[str, Any] | None: ...
    def pending_texts(self, turn_ids: Sequence[str]) -> dict[str, str]: ...
    def commit(self, draft: Draft) -> AddReceipt: ...
    def settle(self, user_id: str | None = None) -> None: ...
    def close(self) -> None: ...


def check(
    writer: Writer,
    objs: Sequence[Any],
    *,
    user_id: str,
    source: str,
    max_turn_chars: int,
    now: datetime | None = None,
    default_stream: str = "api",
) -> tuple[list[TurnIn], list[Rejected]]:
    """One batch of generic records for `user_id`: the turns to write and the
    refusals (with their index and reason), in order."""
    _, items = parse_objects(
        objs,
        user_id=user_id,
        source=source,
        now=now or now_utc(),
        default_stream=default_stream,
        max_turn_chars=max_turn_chars,
    )
    return _one_text_per_id(writer, user_id, list(objs), items)


def _one_text_per_id(
    writer: Writer, user_id: str, objs: list[Any], items: list[TurnIn | Rejected]
) -> tuple[list[TurnIn], list[Rejected]]:
    """The turns to write and the refusals, in order. A client id already used
    for other text (earlier in the batch, pending, or stored) is a conflict,
    refused and quarantined, never counted as a duplicate of what it contradicts."""
    named = [t.turn_id for t in items if isinstance(t, TurnIn) and t.native_id]
    stored: dict[str, str] = {}
    if named:
        maybe = writer.raw.stored.maybe(named)  # the rest are certainly new
        stored = {t.turn_id: t.text for t in writer.raw.by_ids(user_id, maybe)}
        stored.update(writer.pending_texts(named))
    turns: list[TurnIn] = []
    rejects: list[Rejected] = []
    for i, item in enumerate(items):
        if isinstance(item, Rejected):
            rejects.append(item)
            continue
        other = stored.get(item.turn_id)
        if other is not None and other != item.text:
            rejects.append(
                Rejected(
                    user_id=user_id,
                    stream_id=item.stream_id,
                    source=item.source,
                    line_no=i,
                    reason=f"item {i}: conflict: id {item.native_id[:80]!r} is already "
                    "stored with other text (kept, not replaced)",
                    raw=raw_of(objs[i]),
                )
            )
            continue
        if item.native_id:
            stored.setdefault(item.turn_id, item.text)
        turns.append(item)
    return turns, rejects
