"""Ingest receipts: one row per acknowledged write of turns (HTTP, MCP,
Python), so a caller can ask later what became of it, and so a retry that
carries the same idempotency key gets the first answer instead of a second
write. The key is kept as a hash; the turns by id, never their text."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from episodic.models import now_utc
from storage import filters
from storage.codec import to_aware, to_naive
from storage.db import Store
from storage.group import GroupCommit

TABLE = "ingest_receipts"
_PROCESS = secrets.token_hex(8)
_COUNTER = itertools.count()
MAX_GROUP = 1_000  # receipts per commit


def schema() -> pa.Schema:
    return pa.schema(
        [
            ("ingest_id", pa.string()),
            ("user_id", pa.string()),
            ("idempotency", pa.string()),  # sha256 of the caller's key, or ""
            ("at", pa.timestamp("us")),
            ("turn_ids", pa.list_(pa.string())),
            ("answer", pa.string()),  # the receipt as first given, JSON
        ]
    )


@dataclass(frozen=True)
class Receipt:
    ingest_id: str
    user_id: str
    at: datetime
    turn_ids: list[str]
    answer: dict[str, Any]


def key_hash(user_id: str, key: str) -> str:
    return hashlib.sha256(f"{user_id}\0{key}".encode()).hexdigest()


class Receipts:
    def __init__(self, store: Store) -> None:
        self.table = store.declared(TABLE, schema())
        # concurrent writers' receipts share one commit (each its own row)
        self._group: GroupCommit[dict[str, Any], None] = GroupCommit(self._insert, MAX_GROUP)

    @staticmethod
    def new_id() -> str:
        # unique without a syscall per id (os.urandom took 0.5 ms here): a
        # random prefix per process (and its pid, which a fork changes), then a counter
        return f"ing_{_PROCESS}{os.getpid():x}_{next(_COUNTER):x}"

    def by_key(self, user_id: str, key: str) -> Receipt | None:
        cond = filters.user(user_id) & filters.eq("idempotency", key_hash(user_id, key))
        rows = self.table.search().where(cond.lance).limit(1).to_list()
        return self._receipt(rows[0]) if rows else None

    def get(self, user_id: str, ingest_id: str) -> Receipt | None:
        cond = filters.user(user_id) & filters.eq("ingest_id", ingest_id)
        rows = self.table.search().where(cond.lance).limit(1).to_list()
        return self._receipt(rows[0]) if rows else None

    def insert_grouped(self, row: dict[str, Any]) -> None:
        """One row, committed with whatever other threads insert meanwhile."""
        self._group.submit(row)

    @staticmethod
    def row(
        user_id: str,
        ingest_id: str,
        hashed_key: str,
        turn_ids: list[str],
        answer: dict[str, Any],
        *,
        at: datetime | None = None,
    ) -> dict[str, Any]:
        """A receipt row; `hashed_key` is `key_hash(user, key)` or ""."""
        return {
            "ingest_id": ingest_id,
            "user_id": user_id,
            "idempotency": hashed_key,
            "at": at if at is not None else to_naive(now_utc()),
            "turn_ids": turn_ids,
            "answer": json.dumps(answer, default=str),
        }

    def insert(self, rows: Sequence[dict[str, Any]]) -> None:
        """Rows by `ingest_id`, insert-if-absent: inserting twice = once."""
        if rows:
            self._insert(rows)

    def _insert(self, rows: Sequence[dict[str, Any]]) -> list[None]:
        data = pa.Table.from_pylist(list(rows), schema=schema())
        self.table.merge_insert("ingest_id").when_not_matched_insert_all().execute(data)
        return [None] * len(rows)

    @staticmethod
    def _receipt(r: dict[str, Any]) -> Receipt:
        at = to_aware(r["at"])
        assert at is not None
        return Receipt(
            r["ingest_id"], r["user_id"], at, list(r["turn_ids"] or []), json.loads(r["answer"])
        )
