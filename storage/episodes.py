"""Episodes: written once when closed (idempotent on a deterministic id),
then enriched in place with salience, facts state and recall statistics."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from episodic.models import Episode
from episodic.vocab import FactsState
from storage import filters
from storage.codec import encode_column, from_row, to_row
from storage.db import Store

MAX_ROWS = 10_000_000
# what a whole-history read leaves out: the centroid (384 floats, a Python
# float each once decoded) and the fact plan (JSON with a vector per fact)
# are most of a row, and reflection reads neither
_HEAVY = ("centroid", "fact_plan")


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
        return self.store.insert_new("episodes", [to_row(e, self.store.dim) for e in episodes])

    def update(self, user_id: str, changes: dict[str, dict[str, Any]]) -> int:
        """Column updates for many episodes of one user in one write."""
        if not changes:
            return 0
        ids = list(changes)
        existing = self._existing_ids(user_id, ids)
        cols: set[str] = set()
        for ch in changes.values():
            cols.update(ch)
        ids = [eid for eid in ids if eid in existing]  # an update never creates an episode
        # an episode missing a column in `changes` keeps its stored value
        partial = [eid for eid in ids if not cols <= changes[eid].keys()]
        stored = {e.episode_id: e for e in self.by_ids(user_id, partial)} if partial else {}
        dim = self.store.dim
        encoded = []
        for eid in ids:
            ch = changes[eid]
            values = {c: ch[c] if c in ch else getattr(stored[eid], c) for c in cols}
            row = {c: encode_column("episodes", c, v, dim) for c, v in values.items()}
            encoded.append({"episode_id": eid, **row})
        return self.store.update_columns("episodes", encoded)

    # ---- reads --------------------------------------------------------
    def list(
        self,
        user_id: str,
        stream_id: str | None = None,
        *,
        where: Any = None,
        limit: int = MAX_ROWS,
        columns: Sequence[str] | None = None,
    ) -> builtins.list[Episode]:
        """The user's episodes (of one stream), by stream and first seq;
        `columns`: only those are read, the others keep their defaults."""
        cond = filters.user(user_id) if stream_id is None else filters.stream(user_id, stream_id)
        if where is not None:
            cond = cond & where
        q = self.table.search().where(cond.lance)
        if columns is not None:
            q = q.select(list(columns))
        eps = [from_row(Episode, r) for r in q.limit(limit).to_list()]
        eps.sort(key=lambda e: (e.stream_id, e.first_seq))
        return eps

    def _keys(self, user_id: str, where: Any, columns: Sequence[str], limit: int) -> pa.Table:
        """A few columns of the user's episodes matching `where`: a step that
        goes through many episodes learns which ones from this, then reads
        them whole a bounded window at a time."""
        cond = filters.user(user_id) & where
        return self.table.search().where(cond.lance).select(list(columns)).limit(limit).to_arrow()

    def by_ids(self, user_id: str, ids: Iterable[str]) -> builtins.list[Episode]:
        rows = self.store.where_in("episodes", "episode_id", ids, user_id=user_id)
        return [from_row(Episode, r) for r in rows]

    def _existing_ids(self, user_id: str, ids: builtins.list[str]) -> set[str]:
        """Ids of this user's stored episodes; reads one column, not the rows."""
        cols = ["episode_id"]
        rows = self.store.where_in("episodes", "episode_id", ids, user_id=user_id, columns=cols)
        return {str(r["episode_id"]) for r in rows}

    def spans(self, user_id: str | None = None) -> pa.Table:
        """Id, stream, seq range, turn ids and count of every episode (of one
        user): what an integrity check needs, without vectors or text."""
        q = self.table.search()
        if user_id is not None:
            q = q.where(filters.user(user_id).lance)
        cols = ["episode_id", "user_id", "stream_id", "first_seq", "last_seq", "turn_ids"]
        return q.select([*cols, "n_turns"]).limit(MAX_ROWS).to_arrow()

    def scored_centroids(self, user_id: str, limit: int) -> builtins.list[builtins.list[float]]:
        """The centroids of the scored episodes among the user's first `limit`
        rows (what `list(user_id, limit=limit)` reads), by stream and first seq:
        four columns, not the rows with their text."""
        cols = ["stream_id", "first_seq", "centroid", "salience_source"]
        q = self.table.search().where(filters.user(user_id).lance).select(cols).limit(limit)
        rows = q.to_list()
        rows.sort(key=lambda r: (r["stream_id"], r["first_seq"]))
        return [
            list(r["centroid"])
            for r in rows
            if r["salience_source"] and r["centroid"] is not None and any(r["centroid"])
        ]

    def unscored(self, user_id: str, limit: int = 10_000) -> builtins.list[Episode]:
        return self.list(user_id, where=filters.eq("salience_source", ""), limit=limit)

    def unscored_ids(self, user_id: str, limit: int = 10_000) -> builtins.list[str]:
        """The ids `unscored` would return, in its order, without the rows."""
        cols = ("episode_id", "stream_id", "first_seq")
        rows = self._keys(user_id, filters.eq("salience_source", ""), cols, limit).to_pylist()
        rows.sort(key=lambda r: (r["stream_id"], r["first_seq"]))
        return [str(r["episode_id"]) for r in rows]

    def facts_pending(self, user_id: str, limit: int = 10_000) -> builtins.list[Episode]:
        return self.list(user_id, where=_facts_to_merge(), limit=limit)

    def facts_pending_ids(self, user_id: str, limit: int = 10_000) -> builtins.list[str]:
        """The ids of `facts_pending` in event order (start, stream, first seq),
        the order facts are merged in, without the rows."""
        cols = ("episode_id", "started_at", "stream_id", "first_seq")
        rows = self._keys(user_id, _facts_to_merge(), cols, limit).to_pylist()
        rows.sort(key=lambda r: (r["started_at"], r["stream_id"], r["first_seq"]))
        return [str(r["episode_id"]) for r in rows]

    def in_order(self, user_id: str, ids: Sequence[str]) -> builtins.list[Episode]:
        """The stored episodes among `ids`, whole, in the order of `ids`."""
        found = {e.episode_id: e for e in self.by_ids(user_id, ids)}
        return [found[i] for i in ids if i in found]

    def users_with_pending(self, user_id: str | None = None) -> builtins.list[str]:
        """Users with an episode still to score or to merge facts from (a run
        that died after segmenting leaves these behind)."""
        cond = filters.eq("salience_source", "") | _facts_to_merge()
        if user_id is not None:
            cond = filters.user(user_id) & cond
        rows = self.table.search().where(cond.lance).select(["user_id"]).limit(MAX_ROWS).to_arrow()
        return sorted(set(rows["user_id"].to_pylist())) if rows.num_rows else []

    def users(self) -> builtins.list[str]:
        rows = self.table.search().select(["user_id"]).limit(MAX_ROWS).to_arrow()
        return sorted(set(rows["user_id"].to_pylist())) if rows.num_rows else []

    def count(self, user_id: str, stream_id: str | None = None) -> int:
        cond = filters.user(user_id) if stream_id is None else filters.stream(user_id, stream_id)
        return self.store.count("episodes", cond)

    def scored_since(self, user_id: str, after: datetime | None) -> builtins.list[Episode]:
        """The user's scored episodes closed after `after` (all when None),
        filtered in the query: a poll must not read the user's whole history.
        Without centroid and fact plan (left empty): on a first reflection
        this is every episode of the user, and those two are most of a row."""
        cond = filters.ne("salience_source", "")
        if after is not None:
            cond = cond & filters.after("closed_at", after)
        return self.list(user_id, where=cond, columns=_BRIEF)


_BRIEF = tuple(n for n in Episode.model_fields if n not in _HEAVY)


def _facts_to_merge() -> Any:
    """Closed episodes whose facts are not merged yet (pending, or planned
    and not applied)."""
    pending = filters.eq("facts_state", FactsState.PENDING)
    planned = filters.eq("facts_state", FactsState.PLANNED)
    return (pending | planned) & filters.eq("status", "closed")
