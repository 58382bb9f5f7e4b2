"""Episodes: written once when closed (idempotent on a deterministic id),
then enriched in place with salience, facts state and recall statistics."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from episodic.models import Episode
from storage import filters
from storage.codec import dumps, loads, to_aware, to_naive, vector
from storage.db import Store
from storage.schemas import episodes as episodes_schema

MAX_ROWS = 10_000_000


class Episodes:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.table = store.table("episodes")

    # ---- writes -------------------------------------------------------
    def write(self, episodes: Sequence[Episode]) -> int:
        """Insert closed episodes; an episode already stored is left alone, so a
        rerun after a crash adds nothing twice."""
        if not episodes:
            return 0
        rows = [self._to_row(e) for e in episodes]
        data = pa.Table.from_pylist(rows, schema=episodes_schema(self.store.dim))
        res = self.table.merge_insert("episode_id").when_not_matched_insert_all().execute(data)
        return int(res.num_inserted_rows)

    def update(self, user_id: str, changes: dict[str, dict[str, Any]]) -> int:
        """Column updates for many episodes of one user in one write."""
        if not changes:
            return 0
        ids = list(changes)
        existing = self._existing_ids(user_id, ids)
        cols: set[str] = set()
        for ch in changes.values():
            cols.update(ch)
        rows = []
        for eid in ids:
            if eid not in existing:
                continue  # never create an episode through an update
            row: dict[str, Any] = {"episode_id": eid}
            for c in cols:
                row[c] = _encode(c, changes[eid].get(c, _MISSING))
            rows.append(row)
        # rows missing a column keep it: fill from the stored value
        if any(_MISSING in r.values() for r in rows):
            stored = {e.episode_id: self._to_row(e) for e in self.by_ids(user_id, ids)}
            for r in rows:
                for c, v in list(r.items()):
                    if v is _MISSING:
                        r[c] = stored[r["episode_id"]][c]
        if not rows:
            return 0
        full = episodes_schema(self.store.dim)
        schema = pa.schema([full.field("episode_id")] + [full.field(c) for c in sorted(cols)])
        data = pa.Table.from_pylist(rows, schema=schema)
        res = self.table.merge_insert("episode_id").when_matched_update_all().execute(data)
        return int(res.num_updated_rows)

    # ---- reads --------------------------------------------------------
    def list(
        self,
        user_id: str,
        stream_id: str | None = None,
        *,
        where: Any = None,
        limit: int = MAX_ROWS,
    ) -> builtins.list[Episode]:
        cond = filters.user(user_id) if stream_id is None else filters.stream(user_id, stream_id)
        if where is not None:
            cond = cond & where
        rows = self.table.search().where(cond).limit(limit).to_list()
        eps = [self._from_row(r) for r in rows]
        eps.sort(key=lambda e: (e.stream_id, e.first_seq))
        return eps

    def by_ids(self, user_id: str, ids: Iterable[str]) -> builtins.list[Episode]:
        ids = list(ids)
        out: builtins.list[Episode] = []
        for i in range(0, len(ids), 1000):
            chunk = ids[i : i + 1000]
            rows = (
                self.table.search()
                .where(filters.user_in(user_id, "episode_id", chunk))
                .limit(len(chunk) + 1)
                .to_list()
            )
            out.extend(self._from_row(r) for r in rows)
        return out

    def _existing_ids(self, user_id: str, ids: builtins.list[str]) -> set[str]:
        """Ids of this user's stored episodes; reads one column, not the rows."""
        found: set[str] = set()
        for i in range(0, len(ids), 1000):
            chunk = ids[i : i + 1000]
            tbl = (
                self.table.search()
                .where(filters.user_in(user_id, "episode_id", chunk))
                .select(["episode_id"])
                .limit(len(chunk) + 1)
                .to_arrow()
            )
            found.update(tbl["episode_id"].to_pylist())
        return found

    def spans(self, user_id: str | None = None) -> pa.Table:
        """Id, stream, seq range, turn ids and count of every episode (of one
        user): what an integrity check needs, without vectors or text."""
        q = self.table.search()
        if user_id is not None:
            q = q.where(filters.user(user_id))
        cols = ["episode_id", "user_id", "stream_id", "first_seq", "last_seq", "turn_ids"]
        return q.select([*cols, "n_turns"]).limit(MAX_ROWS).to_arrow()

    def unscored(self, user_id: str, limit: int = 10_000) -> builtins.list[Episode]:
        return self.list(user_id, where=filters.eq("salience_source", ""), limit=limit)

    def facts_pending(self, user_id: str, limit: int = 10_000) -> builtins.list[Episode]:
        cond = (filters.eq("facts_state", "") | filters.eq("facts_state", "planned")) & (
            filters.eq("status", "closed")
        )
        return self.list(user_id, where=cond, limit=limit)

    def users_with_pending(self, user_id: str | None = None) -> builtins.list[str]:
        """Users with an episode still to score or to merge facts from (a run
        that died after segmenting leaves these behind)."""
        cond = filters.eq("salience_source", "") | (
            (filters.eq("facts_state", "") | filters.eq("facts_state", "planned"))
            & filters.eq("status", "closed")
        )
        if user_id is not None:
            cond = filters.user(user_id) & cond
        rows = self.table.search().where(cond).select(["user_id"]).limit(MAX_ROWS).to_arrow()
        return sorted(set(rows["user_id"].to_pylist())) if rows.num_rows else []

    def users(self) -> builtins.list[str]:
        rows = self.table.search().select(["user_id"]).limit(MAX_ROWS).to_arrow()
        return sorted(set(rows["user_id"].to_pylist())) if rows.num_rows else []

    def count(self, user_id: str) -> int:
        return int(self.table.count_rows(filters.sql(filters.user(user_id))))

    # ---- codec --------------------------------------------------------
    def _to_row(self, e: Episode) -> dict[str, Any]:
        return {
            "episode_id": e.episode_id,
            "user_id": e.user_id,
            "stream_id": e.stream_id,
            "first_seq": e.first_seq,
            "last_seq": e.last_seq,
            "turn_ids": list(e.turn_ids),
            "n_turns": e.n_turns,
            "started_at": to_naive(e.started_at),
            "ended_at": to_naive(e.ended_at),
            "closed_at": to_naive(e.closed_at),
            "boundary_reason": e.boundary_reason,
            "boundary_score": float(e.boundary_score),
            "signal_scores": dumps(e.signal_scores),
            "centroid": vector(e.centroid, self.store.dim),
            "peak_surprisal": float(e.peak_surprisal),
            "summary": e.summary,
            "text": e.text,
            "salience": e.salience,
            "salience_source": e.salience_source,
            "salience_rationale": e.salience_rationale,
            "recall_count": e.recall_count,
            "last_recalled_at": to_naive(e.last_recalled_at),
            "strength": float(e.strength),
            "status": e.status,
            "parent_episode_id": e.parent_episode_id or "",
            "continues_episode_id": e.continues_episode_id or "",
            "facts_state": "",
            "fact_plan": "",
        }

    @staticmethod
    def _from_row(r: dict[str, Any]) -> Episode:
        return Episode(
            episode_id=r["episode_id"],
            user_id=r["user_id"],
            stream_id=r["stream_id"],
            first_seq=r["first_seq"],
            last_seq=r["last_seq"],
            turn_ids=list(r["turn_ids"] or []),
            n_turns=r["n_turns"],
            started_at=to_aware(r["started_at"]),  # type: ignore[arg-type]
            ended_at=to_aware(r["ended_at"]),  # type: ignore[arg-type]
            closed_at=to_aware(r["closed_at"]),  # type: ignore[arg-type]
            boundary_reason=r["boundary_reason"],
            boundary_score=r["boundary_score"],
            signal_scores=loads(r["signal_scores"], {}),
            centroid=list(r["centroid"] or []),
            peak_surprisal=r["peak_surprisal"] or 0.0,
            summary=r["summary"] or "",
            text=r["text"] or "",
            salience=r["salience"] or 0,
            salience_source=r["salience_source"] or "",
            salience_rationale=r["salience_rationale"] or "",
            recall_count=r["recall_count"] or 0,
            last_recalled_at=to_aware(r["last_recalled_at"]),
            strength=r["strength"] if r["strength"] is not None else 1.0,
            status=r["status"],
            parent_episode_id=r["parent_episode_id"] or None,
            continues_episode_id=r["continues_episode_id"] or None,
            facts_state=r.get("facts_state") or "",
            fact_plan=r.get("fact_plan") or "",
        )


class _Missing:
    pass


_MISSING: Any = _Missing()


def _encode(column: str, value: Any) -> Any:
    if value is _MISSING:
        return value
    if isinstance(value, datetime):
        return to_naive(value)
    if column == "signal_scores" and not isinstance(value, str):
        return dumps(value)
    return value
