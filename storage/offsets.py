"""Capture offsets: per (user, file), how many bytes of a growing transcript
have been appended to raw, and a fingerprint of the bytes just before that
offset (a rewritten file no longer matches it). Written only after the append
committed, so a crash in between sends those lines again, and raw dedup
absorbs them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from episodic.models import now_utc, stable_id
from storage import filters
from storage.codec import to_aware, to_naive
from storage.db import Store

TABLE = "capture_offsets"


def schema() -> pa.Schema:
    return pa.schema(
        [
            ("key", pa.string()),
            ("user_id", pa.string()),
            ("path", pa.string()),
            ("offset", pa.int64()),
            ("line", pa.int64()),  # the line number that begins at `offset`
            ("updated_at", pa.timestamp("us")),
            ("fingerprint", pa.string()),  # of the bytes before `offset`
        ]
    )


@dataclass(frozen=True)
class Offset:
    user_id: str
    path: str
    offset: int
    line: int
    updated_at: datetime | None
    fingerprint: str = ""


class Offsets:
    def __init__(self, store: Store) -> None:
        self.table = store.declared(TABLE, schema())
        if "fingerprint" not in self.table.schema.names:  # a store from before fingerprints
            self.table.add_columns({"fingerprint": "''"})

    @staticmethod
    def key(user_id: str, path: str) -> str:
        return stable_id("capture", user_id, path)

    def get(self, user_id: str, path: str) -> Offset:
        """The stored offset; offset 0, line 1 when none is stored: the whole file again."""
        rows = (
            self.table.search()
            .where((filters.user(user_id) & filters.eq("key", self.key(user_id, path))).lance)
            .limit(2)
            .to_list()
        )
        if not rows:
            return Offset(user_id, path, 0, 1, None)
        return self._offset(rows[0])

    @staticmethod
    def _offset(r: dict[str, Any]) -> Offset:
        return Offset(
            str(r["user_id"]),
            str(r["path"]),
            int(r["offset"]),
            int(r["line"]),
            to_aware(r["updated_at"]),
            str(r.get("fingerprint") or ""),
        )

    def set(self, user_id: str, path: str, offset: int, line: int, fingerprint: str = "") -> None:
        if offset < 0 or line < 1:
            raise ValueError(f"offset must be >= 0 and line >= 1, got {offset}, {line}")
        row = {
            "key": self.key(user_id, path),
            "user_id": user_id,
            "path": path,
            "offset": offset,
            "line": line,
            "updated_at": to_naive(now_utc()),
            "fingerprint": fingerprint,
        }
        data = pa.Table.from_pylist([row], schema=schema())
        (
            self.table.merge_insert("key")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(data)
        )

    def forget(self, user_id: str, path: str) -> None:
        """Drop the stored offset (tests and `--from-start`)."""
        cond = filters.user(user_id) & filters.eq("key", self.key(user_id, path))
        self.table.delete(cond.lance)

    def list(self, user_id: str) -> list[Offset]:
        rows = self.table.search().where(filters.user(user_id).lance).limit(1_000_000).to_list()
        return [self._offset(r) for r in rows]
