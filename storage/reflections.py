"""Reflections and the per-user ledger of salience piled up since the last one."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime

from episodic.models import Reflection
from storage import filters
from storage.codec import from_row, to_aware, to_row
from storage.db import Store
from storage.rows import ReflectionMark

MAX_ROWS = 10_000_000


class Reflections:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.table = store.table("reflections")
        self.marks = store.table("reflection_marks")

    def write(self, items: Sequence[Reflection]) -> int:
        if not items:
            return 0
        return self.store.insert_new("reflections", [to_row(r, self.store.dim) for r in items])

    def list(self, user_id: str, *, include_archived: bool = False) -> builtins.list[Reflection]:
        cond = filters.user(user_id)
        if not include_archived:
            cond = cond & filters.eq("status", "active")
        rows = self.table.search().where(cond.lance).limit(MAX_ROWS).to_list()
        return sorted((from_row(Reflection, r) for r in rows), key=lambda r: r.created_at)

    def by_ids(self, user_id: str, ids: Sequence[str]) -> builtins.list[Reflection]:
        rows = self.store.where_in("reflections", "reflection_id", ids, user_id=user_id)
        return [from_row(Reflection, r) for r in rows]

    # ---- ledger ---------------------------------------------------------
    def last_reflected_at(self, user_id: str) -> datetime | None:
        rows = self.marks.search().where(filters.user(user_id).lance).limit(2).to_list()
        return to_aware(rows[0]["last_reflected_at"]) if rows else None

    def mark_reflected(self, user_id: str, at: datetime) -> None:
        self.store.upsert("reflection_marks", [to_row(ReflectionMark(user_id, at), 0)])
