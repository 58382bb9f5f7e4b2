"""Capture offsets: per (user, file), how many bytes of a growing transcript
have been appended to raw. Written only after the append committed, so a
crash in between sends those lines again, and raw dedup absorbs them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa

from episodic.models import now_utc, stable_id
from storage import filters
from storage.codec import to_aware, to_naive
from storage.db import Store
from storage.keys import open_table

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
        ]
    )


@dataclass(frozen=True)
class Offset:
    user_id: str
    path: str
    offset: int
    line: int
    updated_at: datetime | None


class Offsets:
    def __init__(self, store: Store) -> None:
        self.table = open_table(store, TABLE, schema())

    @staticmethod
    def key(user_id: str, path: str) -> str:
        return stable_id("capture", user_id, path)

    def get(self, user_id: str, path: str) -> tuple[int, int]:
        """(byte offset, its line number); (0, 1) when none is stored: the whole file again."""
        rows = (
            self.table.search()
            .where(filters.user(user_id) & filters.eq("key", self.key(user_id, path)))
            .limit(2)
            .to_list()
        )
        return (int(rows[0]["offset"]), int(rows[0]["line"])) if rows else (0, 1)

    def set(self, user_id: str, path: str, offset: int, line: int) -> None:
        if offset < 0 or line < 1:
            raise ValueError(f"offset must be >= 0 and line >= 1, got {offset}, {line}")
        row = {
            "key": self.key(user_id, path),
            "user_id": user_id,
            "path": path,
            "offset": offset,
            "line": line,
            "updated_at": to_naive(now_utc()),
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
        self.table.delete(filters.sql(cond))

    def list(self, user_id: str) -> list[Offset]:
        rows = self.table.search().where(filters.user(user_id)).limit(1_000_000).to_list()
        return [
            Offset(
                r["user_id"], r["path"], int(r["offset"]), int(r["line"]), to_aware(r["updated_at"])
            )
            for r in rows
        ]
