"""Segmenter checkpoints: one row per (user, stream) holding the watermark,
the open buffer and the serialized detector, written atomically as one row
with an optimistic version check."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import pyarrow as pa

from episodic.errors import ConflictError
from episodic.models import now_utc, stable_id
from storage import filters
from storage.codec import to_aware, to_naive
from storage.db import Store
from storage.schemas import segmenter_state as state_schema


@dataclass
class Checkpoint:
    user_id: str
    stream_id: str
    watermark: int = -1  # last seq fed to the detector
    open_turn_ids: list[str] = field(default_factory=list)
    detector: bytes = b""
    version: int = 0
    last_closed_seq: int = -1
    last_episode_id: str = ""
    updated_at: datetime | None = None
    last_run: str = ""
    last_run_state: str = ""

    @property
    def key(self) -> str:
        return state_key(self.user_id, self.stream_id)


def state_key(user_id: str, stream_id: str) -> str:
    return stable_id("segmenter", user_id, stream_id)


class Checkpoints:
    def __init__(self, store: Store) -> None:
        self.table = store.table("segmenter_state")

    def load(self, user_id: str, stream_id: str) -> Checkpoint:
        rows = (
            self.table.search()
            .where(filters.eq("key", state_key(user_id, stream_id)) & filters.user(user_id))
            .limit(2)
            .to_list()
        )
        if not rows:
            return Checkpoint(user_id=user_id, stream_id=stream_id)
        return self._from_row(rows[0])

    def all(self, user_id: str | None = None) -> list[Checkpoint]:
        q = self.table.search()
        if user_id is not None:
            q = q.where(filters.user(user_id))
        return [self._from_row(r) for r in q.limit(1_000_000).to_list()]

    def save(self, cp: Checkpoint) -> Checkpoint:
        """Write cp as version cp.version + 1; ConflictError if someone else
        moved the row since cp was loaded."""
        new = Checkpoint(**{**cp.__dict__, "version": cp.version + 1, "updated_at": now_utc()})
        data = pa.Table.from_pylist([self._to_row(new)], schema=state_schema())
        if cp.version == 0:
            res = self.table.merge_insert("key").when_not_matched_insert_all().execute(data)
            changed = res.num_inserted_rows
        else:
            # the condition holds only our own integer, never a user value
            res = (
                self.table.merge_insert("key")
                .when_matched_update_all(where=f"target.version = {int(cp.version)}")
                .execute(data)
            )
            changed = res.num_updated_rows
        if changed != 1:
            found = self.load(cp.user_id, cp.stream_id).version
            raise ConflictError(cp.key, cp.version, found)
        return new

    def mark_run(self, user_id: str, stream_id: str, run: str, state: str) -> None:
        self.table.update(
            where=filters.eq("key", state_key(user_id, stream_id)),
            values={"last_run": run, "last_run_state": state},
        )

    @staticmethod
    def _to_row(cp: Checkpoint) -> dict[str, object]:
        return {
            "key": cp.key,
            "user_id": cp.user_id,
            "stream_id": cp.stream_id,
            "watermark": cp.watermark,
            "open_turn_ids": list(cp.open_turn_ids),
            "detector": cp.detector,
            "version": cp.version,
            "last_closed_seq": cp.last_closed_seq,
            "last_episode_id": cp.last_episode_id,
            "updated_at": to_naive(cp.updated_at),
            "last_run": cp.last_run,
            "last_run_state": cp.last_run_state,
        }

    @staticmethod
    def _from_row(r: dict[str, object]) -> Checkpoint:
        return Checkpoint(
            user_id=str(r["user_id"]),
            stream_id=str(r["stream_id"]),
            watermark=int(r["watermark"]),  # type: ignore[call-overload]
            open_turn_ids=list(r["open_turn_ids"] or []),  # type: ignore[call-overload]
            detector=bytes(r["detector"] or b""),  # type: ignore[call-overload]
            version=int(r["version"]),  # type: ignore[call-overload]
            last_closed_seq=int(r["last_closed_seq"]),  # type: ignore[call-overload]
            last_episode_id=str(r["last_episode_id"] or ""),
            updated_at=to_aware(r["updated_at"]),
            last_run=str(r["last_run"] or ""),
            last_run_state=str(r["last_run_state"] or ""),
        )
