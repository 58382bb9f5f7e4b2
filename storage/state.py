"""Segmenter checkpoints: one row per (user, stream) holding the watermark,
the open buffer and the serialized detector, written atomically as one row
with an optimistic version check."""

from __future__ import annotations

import pyarrow as pa

from episodic.errors import ConflictError
from episodic.models import now_utc
from storage import filters
from storage.codec import from_row, to_row
from storage.db import Store
from storage.rows import Checkpoint as Checkpoint
from storage.rows import state_key as state_key
from storage.schemas import schema

CHUNK = 1_000  # keys per IN list
MAX_ROWS = 10_000_000


class Checkpoints:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.table = store.table("segmenter_state")
        self._schema = schema("segmenter_state")

    def load(self, user_id: str, stream_id: str) -> Checkpoint:
        rows = (
            self.table.search()
            .where((filters.eq("key", state_key(user_id, stream_id)) & filters.user(user_id)).lance)
            .limit(2)
            .to_list()
        )
        if not rows:
            return Checkpoint(user_id=user_id, stream_id=stream_id)
        return from_row(Checkpoint, rows[0])

    def load_many(self, user_id: str, stream_ids: list[str]) -> dict[str, Checkpoint]:
        """Each stream's checkpoint (a fresh one where none is stored), in
        one read per 1,000 streams."""
        out = {s: Checkpoint(user_id=user_id, stream_id=s) for s in stream_ids}
        keys = [state_key(user_id, s) for s in out]
        for r in self.store.where_in("segmenter_state", "key", keys, user_id=user_id):
            cp = from_row(Checkpoint, r)
            out[cp.stream_id] = cp
        return out

    def progress(self, user_id: str | None = None) -> dict[tuple[str, str], tuple[int, bool]]:
        """(user, stream) -> (watermark, has open turns), without reading the
        serialized detectors: what deciding which streams have work needs."""
        q = self.table.search()
        if user_id is not None:
            q = q.where(filters.user(user_id).lance)
        tbl = q.select(["user_id", "stream_id", "watermark", "open_turn_ids"]).limit(MAX_ROWS)
        out: dict[tuple[str, str], tuple[int, bool]] = {}
        for r in tbl.to_arrow().to_pylist():
            out[(r["user_id"], r["stream_id"])] = (int(r["watermark"]), bool(r["open_turn_ids"]))
        return out

    def all(self, user_id: str | None = None) -> list[Checkpoint]:
        q = self.table.search()
        if user_id is not None:
            q = q.where(filters.user(user_id).lance)
        return [from_row(Checkpoint, r) for r in q.limit(1_000_000).to_list()]

    def save(self, cp: Checkpoint) -> Checkpoint:
        """Write cp as version cp.version + 1; ConflictError if someone else
        moved the row since cp was loaded."""
        new = Checkpoint(**{**cp.__dict__, "version": cp.version + 1, "updated_at": now_utc()})
        data = pa.Table.from_pylist([to_row(new, 0)], schema=self._schema)
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

    def save_many(self, cps: list[Checkpoint]) -> list[Checkpoint]:
        """`save` for many streams in one commit, each row as its version + 1.
        A row someone else moved since it was loaded is left alone and
        ConflictError names it (the others are written: each is still a
        valid checkpoint of its own stream). Streams must be distinct."""
        if not cps:
            return []
        if len({cp.key for cp in cps}) != len(cps):
            raise ValueError("one checkpoint per stream in a save_many")
        now = now_utc()
        new = [
            Checkpoint(**{**cp.__dict__, "version": cp.version + 1, "updated_at": now})
            for cp in cps
        ]
        data = pa.Table.from_pylist([to_row(c, 0) for c in new], schema=self._schema)
        # an update lands only where the stored version is the one each row was
        # loaded at; a row never stored is inserted (a stored row has version >= 1,
        # so a source row at version 1 cannot match it)
        res = (
            self.table.merge_insert("key")
            .when_matched_update_all(where="target.version = source.version - 1")
            .when_not_matched_insert_all()
            .execute(data)
        )
        if int(res.num_updated_rows) + int(res.num_inserted_rows) != len(new):
            self._raise_conflict(new)
        return new

    def _raise_conflict(self, written: list[Checkpoint]) -> None:
        """Name a row of `written` that is not what is stored (its version and
        write time tell ours from another writer's)."""
        by_user: dict[str, list[Checkpoint]] = {}
        for cp in written:
            by_user.setdefault(cp.user_id, []).append(cp)
        for uid, group in by_user.items():
            stored = self.load_many(uid, [c.stream_id for c in group])
            for cp in group:
                have = stored[cp.stream_id]
                if (have.version, have.updated_at) != (cp.version, cp.updated_at):
                    raise ConflictError(cp.key, cp.version - 1, have.version)
        raise ConflictError(written[0].key, written[0].version - 1, -1)

    def mark_runs(self, user_id: str, stream_ids: list[str], run: str, state: str) -> None:
        """Name the run and its state on many streams: one write per 5,000."""
        keys = [state_key(user_id, s) for s in stream_ids]
        for i in range(0, len(keys), 5 * CHUNK):
            self.store.update_where(
                "segmenter_state",
                filters.user_in(user_id, "key", keys[i : i + 5 * CHUNK]),
                {"last_run": run, "last_run_state": state},
            )
