"""Reflections and the per-user ledger of salience piled up since the last one."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from episodic.models import Reflection
from storage import filters
from storage.codec import to_aware, to_naive, vector
from storage.db import Store
from storage.schemas import reflection_marks as marks_schema
from storage.schemas import reflections as reflections_schema

MAX_ROWS = 10_000_000


class Reflections:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.table = store.table("reflections")
        self.marks = store.table("reflection_marks")

    def write(self, items: Sequence[Reflection]) -> int:
        if not items:
            return 0
        rows = [
            {
                "reflection_id": r.reflection_id,
                "user_id": r.user_id,
                "text": r.text,
                "vector": vector(r.vector, self.store.dim),
                "evidence_episode_ids": list(r.evidence_episode_ids),
                "evidence_fact_ids": list(r.evidence_fact_ids),
                "importance": float(r.importance),
                "created_at": to_naive(r.created_at),
                "recall_count": r.recall_count,
                "last_recalled_at": to_naive(r.last_recalled_at),
                "status": r.status,
            }
            for r in items
        ]
        data = pa.Table.from_pylist(rows, schema=reflections_schema(self.store.dim))
        res = self.table.merge_insert("reflection_id").when_not_matched_insert_all().execute(data)
        return int(res.num_inserted_rows)

    def list(self, user_id: str, *, include_archived: bool = False) -> builtins.list[Reflection]:
        cond = filters.user(user_id)
        if not include_archived:
            cond = cond & filters.eq("status", "active")
        rows = self.table.search().where(cond).limit(MAX_ROWS).to_list()
        return sorted((self._from_row(r) for r in rows), key=lambda r: r.created_at)

    def by_ids(self, user_id: str, ids: Sequence[str]) -> builtins.list[Reflection]:
        if not ids:
            return []
        rows = (
            self.table.search()
            .where(filters.user_in(user_id, "reflection_id", list(ids)))
            .limit(len(ids) + 1)
            .to_list()
        )
        return [self._from_row(r) for r in rows]

    # ---- ledger ---------------------------------------------------------
    def last_reflected_at(self, user_id: str) -> datetime | None:
        rows = self.marks.search().where(filters.user(user_id)).limit(2).to_list()
        return to_aware(rows[0]["last_reflected_at"]) if rows else None

    def mark_reflected(self, user_id: str, at: datetime) -> None:
        data = pa.Table.from_pylist(
            [{"user_id": user_id, "last_reflected_at": to_naive(at)}],
            schema=marks_schema(),
        )
        (
            self.marks.merge_insert("user_id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(data)
        )

    @staticmethod
    def _from_row(r: dict[str, Any]) -> Reflection:
        return Reflection(
            reflection_id=r["reflection_id"],
            user_id=r["user_id"],
            text=r["text"],
            vector=list(r["vector"] or []),
            evidence_episode_ids=list(r["evidence_episode_ids"] or []),
            evidence_fact_ids=list(r["evidence_fact_ids"] or []),
            importance=r["importance"] or 0.0,
            created_at=to_aware(r["created_at"]),  # type: ignore[arg-type]
            recall_count=r["recall_count"] or 0,
            last_recalled_at=to_aware(r["last_recalled_at"]),
            status=r["status"],
        )
