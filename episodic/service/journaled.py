"""Writes acknowledged from the journal: an add answers once its record (its
new turns, its refusals and its receipt) is fsynced in the ingest journal
(`storage.journal`), and a flusher thread moves the records into LanceDB in
large groups (raw turns, then refusals, then receipts), each segment dropped
once it is stored. Until then the turns are *pending*: a later add counts
them as duplicates, and every read of the user waits for them (`settle`), so
a turn is searchable the moment its add has answered.

Counts are decided by one group leader at a time (`storage.group`): pending
first, then LanceDB, so a turn moving from one to the other between the two
looks is still seen (it leaves pending only after it is stored).
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from episodic.crashpoints import crashpoint
from episodic.models import Rejected, TurnIn, now_utc
from episodic.service.accept import Draft
from episodic.service.views import AddReceipt
from storage import journal
from storage.codec import to_naive
from storage.group import GroupCommit
from storage.raw import RawLog
from storage.receipts import Receipts, key_hash

log = logging.getLogger(__name__)

MAX_GROUP = 20_000  # turns per journal write
RETRY_S = 1.0  # after a failed move into LanceDB
SETTLE_S = 60.0  # the longest a read waits for its user's pending turns


@dataclass(frozen=True)
class Entry:
    """A journal record and the objects it was made from (kept in memory so
    the flusher does not parse what it just wrote)."""

    record: dict[str, Any]
    turns: list[TurnIn]
    rejects: list[Rejected]

    @classmethod
    def parse(cls, record: dict[str, Any]) -> Entry:
        return cls(
            record,
            [TurnIn.model_validate(t) for t in record["turns"]],
            [
                Rejected.model_validate({**x, "raw": base64.b64decode(x["raw"])})
                for x in record["rejects"]
            ],
        )


_TURN_FIELDS = tuple(TurnIn.model_fields)


def _turn_json(t: TurnIn) -> dict[str, Any]:
    """What `TurnIn.model_validate` reads back; a tenth of model_dump's cost,
    which was the largest part of an answer's CPU."""
    out = {k: getattr(t, k) for k in _TURN_FIELDS}
    out["event_ts"] = t.event_ts.isoformat()
    return out


def _record(d: Draft, fresh: list[TurnIn], answer: dict[str, Any]) -> dict[str, Any]:
    return {
        "user_id": d.user_id,
        "ingest_id": d.ingest_id,
        "idempotency": d.idempotency,
        "at": now_utc().isoformat(),
        "turns": [_turn_json(t) for t in fresh],
        "rejects": [
            {**r.model_dump(mode="json", exclude={"raw"}), "raw": base64.b64encode(r.raw).decode()}
            for r in d.rejects
        ],
        "answer": answer,
    }


def store(raw: RawLog, receipts: Receipts, entries: Sequence[Entry]) -> None:
    """Move journal entries into LanceDB: turns, refusals, then receipts (a
    receipt is found only once its turns are). Safe to repeat."""
    turns = [t for e in entries for t in e.turns]
    if turns:
        raw.append(turns)
    rejects = [x for e in entries for x in e.rejects]
    if rejects:
        raw.quarantine(rejects)
    records = [e.record for e in entries]
    receipts.insert(
        [
            receipts.row(
                r["user_id"],
                r["ingest_id"],
                r["idempotency"],
                [str(t) for t in r["answer"]["turn_ids"]],
                r["answer"],
                at=to_naive(datetime.fromisoformat(r["at"])),
            )
            for r in records
        ]
    )


def recover(directory: Path, raw: RawLog, receipts: Receipts) -> int:
    """Store the records of segments whose writer died; returns how many. A
    segment that cannot be stored now (the store refuses, a record does not
    parse) is kept for the next opener and logged: opening must not fail."""
    n = 0
    for seg, lock in journal.orphans(directory):
        try:
            entries = [Entry.parse(r) for r in journal.read(seg)]
            store(raw, receipts, entries)
            journal.drop(seg)
            n += len(entries)
        except Exception:
            log.exception("journal segment %s kept: storing it failed", seg.name)
        finally:
            journal.release(lock)
    return n


class JournaledWriter:
    def __init__(self, raw: RawLog, receipts: Receipts, directory: Path) -> None:
        self.raw = raw
        self.receipts = receipts
        self.directory = directory
        self._group: GroupCommit[Draft, dict[str, Any]] = GroupCommit(self._commit, MAX_GROUP)
        self._cv = threading.Condition()
        self._segment: journal.Segment | None = None
        self._entries: list[Entry] = []
        # pending: journaled, not yet in LanceDB
        self._texts: dict[str, str] = {}  # turn_id -> text
        self._answers: dict[tuple[str, str], dict[str, Any]] = {}  # (user, key hash) -> answer
        self._users: Counter[str] = Counter()  # user -> pending records
        self._thread: threading.Thread | None = None
        self._stopping = False

    # ---- the acknowledging side -------------------------------------------
    def first_answer(self, user_id: str, key: str) -> dict[str, Any] | None:
        h = key_hash(user_id, key)
        with self._cv:
            found = self._answers.get((user_id, h))
        if found is not None:
            return found
        stored = self.receipts.by_key(user_id, key)
        return stored.answer if stored is not None else None

    def pending_texts(self, turn_ids: Sequence[str]) -> dict[str, str]:
        with self._cv:
            return {t: self._texts[t] for t in turn_ids if t in self._texts}

    def commit(self, draft: Draft) -> AddReceipt:
        """Journal `draft`; returns its receipt once the record is on disk."""
        answer = self._group.submit(draft, max(1, len(draft.turns)))
        return AddReceipt.model_validate(answer)

    def _commit(self, drafts: Sequence[Draft]) -> list[dict[str, Any]]:
        ids = [t.turn_id for d in drafts for t in d.turns]
        with self._cv:
            seen = {t for t in ids if t in self._texts}
        seen |= self.raw.existing_ids([t for t in ids if t not in seen])
        entries, answers = [], []
        for d in drafts:
            fresh = []
            for t in d.turns:
                if t.turn_id not in seen:
                    seen.add(t.turn_id)
                    fresh.append(t)
            answer = d.kept(d.receipt(len(fresh), len(d.turns) - len(fresh)))
            entries.append(Entry(_record(d, fresh, answer), fresh, d.rejects))
            answers.append(answer)
        with self._cv:
            if self._segment is None:
                self._segment = journal.Segment(self.directory)
            self._segment.append([e.record for e in entries])  # the acknowledgement
            crashpoint("journal_after_fsync")  # durable, not answered, not stored
            self._entries.extend(entries)
            for d, e in zip(drafts, entries, strict=True):
                for t in e.turns:
                    self._texts[t.turn_id] = t.text
                if d.idempotency:
                    self._answers[(d.user_id, d.idempotency)] = e.record["answer"]
                self._users[d.user_id] += 1
            self._start()
            self._cv.notify_all()
        return answers

    # ---- the storing side -------------------------------------------------
    def settle(self, user_id: str | None = None) -> None:
        """Wait until the user's (everyone's, for None) pending records are in
        LanceDB; returns after SETTLE_S whatever happened (a failing store)."""
        with self._cv:
            self._cv.wait_for(
                lambda: not (self._users[user_id] if user_id else sum(self._users.values())),
                timeout=SETTLE_S,
            )

    def close(self) -> None:
        self.settle()
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=SETTLE_S)

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="journal-flush", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: bool(self._entries) or self._stopping)
                if not self._entries:
                    return
                segment, entries = self._segment, self._entries
                self._segment, self._entries = None, []
            assert segment is not None
            try:
                sealed = segment.seal()
            except OSError:  # the records are on disk either way: store them, drop the file
                log.exception("sealing journal segment %s failed", segment.path.name)
                sealed = segment.path
            crashpoint("journal_before_store")  # answered, not stored
            while True:
                try:
                    store(self.raw, self.receipts, entries)
                    break
                except Exception:  # storage down or full: keep the entries, try again
                    log.exception("moving %d journal records into LanceDB failed", len(entries))
                    time.sleep(RETRY_S)
            journal.drop(sealed)
            segment.release()
            with self._cv:
                for e in entries:
                    user = e.record["user_id"]
                    for t in e.turns:
                        self._texts.pop(t.turn_id, None)
                    if e.record["idempotency"]:
                        self._answers.pop((user, e.record["idempotency"]), None)
                    self._users[user] -= 1
                    if not self._users[user]:
                        del self._users[user]
                self._cv.notify_all()
