"""The fact store, bi-temporal and append-mostly: UPDATE and DELETE close an
old row's validity; nothing is ever erased. Every decision has a history row."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from episodic.models import Fact, FactHistory, now_utc, stable_id
from episodic.retrieval import rrf_scores
from episodic.vocab import FACT_EVENTS, FactEvent, FactStatus
from storage import filters
from storage.codec import from_row, to_naive, to_row
from storage.db import Store

MAX_ROWS = 10_000_000


@dataclass(frozen=True)
class PlannedFact:
    """One decision, resolved to ids, ready to apply idempotently."""

    index: int
    event: FactEvent
    target_fact_id: str | None
    old_text: str | None
    new_text: str | None
    valid_from: datetime
    decided_by: str
    vector: builtins.list[float]
    importance: float = 5.0

    def as_json(self) -> dict[str, Any]:
        # shallow: asdict deep-copies the vector, a twentieth of a consolidation's CPU
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        return out | {"valid_from": self.valid_from.isoformat()}

    @staticmethod
    def from_json(d: dict[str, Any]) -> PlannedFact:
        return PlannedFact(
            index=int(d["index"]),
            event=_event(d["event"]),
            target_fact_id=d.get("target_fact_id"),
            old_text=d.get("old_text"),
            new_text=d.get("new_text"),
            valid_from=datetime.fromisoformat(d["valid_from"]),
            decided_by=str(d["decided_by"]),
            vector=list(d.get("vector") or []),
            importance=float(d.get("importance", 5.0)),
        )


def _event(value: object) -> FactEvent:
    for event in FACT_EVENTS:
        if value == event:
            return event
    raise ValueError(f"a saved plan holds the unknown event {value!r}")


def new_fact_id(user_id: str, episode_id: str, index: int) -> str:
    return stable_id("fact", user_id, episode_id, index)


def history_id(episode_id: str, index: int, event: str) -> str:
    return stable_id("history", episode_id, index, event)


class Facts:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.table = store.table("facts")
        self.history_table = store.table("fact_history")

    # ---- reads --------------------------------------------------------
    def list(self, user_id: str, *, include_inactive: bool = False) -> builtins.list[Fact]:
        cond = filters.user(user_id)
        if not include_inactive:
            cond = cond & filters.eq("status", "active")
        rows = self.table.search().where(cond.lance).limit(MAX_ROWS).to_list()
        out = [from_row(Fact, r) for r in rows]
        out.sort(key=lambda f: (f.valid_from, f.created_at, f.fact_id))
        return out

    def as_of(self, user_id: str, when: datetime) -> builtins.list[Fact]:
        """What we believed was true at event time `when`."""
        return [
            f
            for f in self.list(user_id, include_inactive=True)
            if f.valid_from <= when and (f.valid_to is None or when < f.valid_to)
        ]

    def by_ids(self, user_id: str, ids: Sequence[str]) -> builtins.list[Fact]:
        return [
            from_row(Fact, r) for r in self.store.where_in("facts", "fact_id", ids, user_id=user_id)
        ]

    def candidates(
        self, user_id: str, text: str, vec: np.ndarray | None, k: int = 5
    ) -> builtins.list[tuple[Fact, float]]:
        """Top-k active facts of this user by vector and by full text, fused by
        reciprocal rank. Returns (fact, cosine similarity)."""
        cond = filters.user(user_id) & filters.eq("status", "active")
        ranked: builtins.list[list[str]] = []
        by_id: dict[str, Fact] = {}
        if vec is not None and np.any(vec):
            rows = (
                self.table.search(np.asarray(vec, dtype=np.float32), vector_column_name="vector")
                .distance_type("cosine")
                .where(cond.lance, prefilter=True)
                .limit(k)
                .to_list()
            )
            ranked.append([r["fact_id"] for r in rows])
            by_id.update({r["fact_id"]: from_row(Fact, r) for r in rows})
        if text.strip() and self.store.has_fts("facts"):
            try:
                rows = (
                    self.table.search(text, query_type="fts")
                    .where(cond.lance, prefilter=True)
                    .limit(k)
                    .to_list()
                )
            except (ValueError, RuntimeError):
                rows = []  # a query the tokenizer cannot parse: vector candidates only
            ranked.append([r["fact_id"] for r in rows])
            by_id.update({r["fact_id"]: from_row(Fact, r) for r in rows})
        order = [fid for fid, _ in rrf_scores(ranked)[:k]]
        out = []
        for fid in order:
            f = by_id[fid]
            sim = 0.0
            if vec is not None and f.vector:
                sim = float(np.dot(np.asarray(f.vector, dtype=np.float32), vec))
            out.append((f, sim))
        return out

    def fts_ids(self, user_id: str, text: str, k: int) -> builtins.list[str]:
        """Ids of this user's active facts ranked by full text; empty without an
        FTS index or for a query the tokenizer cannot parse."""
        if not text.strip() or not self.store.has_fts("facts"):
            return []
        cond = filters.user(user_id) & filters.eq("status", "active")
        try:
            rows = (
                self.table.search(text, query_type="fts")
                .where(cond.lance, prefilter=True)
                .select(["fact_id", "_score"])  # naming _score: no lance deprecation warning
                .limit(k)
                .to_list()
            )
        except (ValueError, RuntimeError):
            return []
        return [str(r["fact_id"]) for r in rows]

    def history(self, user_id: str, fact_id: str) -> builtins.list[FactHistory]:
        """Every decision that touched this fact or the chain it belongs to."""
        near: dict[str, set[str]] = {}  # a fact -> the ones it replaced or that replaced it
        for f in self.list(user_id, include_inactive=True):
            if f.supersedes:
                near.setdefault(f.fact_id, set()).add(f.supersedes)
                near.setdefault(f.supersedes, set()).add(f.fact_id)
        chain, todo = {fact_id}, [fact_id]
        while todo:  # the whole chain, transitively
            for other in near.get(todo.pop(), ()):
                if other not in chain:
                    chain.add(other)
                    todo.append(other)
        rows = (
            self.history_table.search()
            .where(filters.user_in(user_id, "fact_id", sorted(chain)).lance)
            .limit(MAX_ROWS)
            .to_list()
        )
        rows += (
            self.history_table.search()
            .where(filters.user_in(user_id, "new_fact_id", sorted(chain)).lance)
            .limit(MAX_ROWS)
            .to_list()
        )
        seen: dict[str, FactHistory] = {}
        for r in rows:
            seen[r["history_id"]] = from_row(FactHistory, r)
        return sorted(seen.values(), key=lambda h: (h.at, h.history_id))

    def all_history(self, user_id: str) -> builtins.list[FactHistory]:
        rows = (
            self.history_table.search().where(filters.user(user_id).lance).limit(MAX_ROWS).to_list()
        )
        return sorted((from_row(FactHistory, r) for r in rows), key=lambda h: (h.at, h.history_id))

    # ---- writes -------------------------------------------------------
    def apply(
        self, user_id: str, episode_id: str, plan: Sequence[PlannedFact], now: datetime
    ) -> dict[str, int]:
        """Apply a plan. Idempotent: ids are derived from (episode, index), so a
        rerun after a crash inserts nothing twice and repeats the same updates."""
        return self.apply_many(user_id, [(episode_id, plan)], now)

    def apply_many(
        self,
        user_id: str,
        plans: Sequence[tuple[str, Sequence[PlannedFact]]],
        now: datetime,
    ) -> dict[str, int]:
        """Apply the plans of several episodes (in order) with one write per
        table: one merge_insert per table instead of three per episode."""
        counts: dict[str, int] = dict.fromkeys(FACT_EVENTS, 0)
        new_facts: builtins.list[Fact] = []
        history: builtins.list[FactHistory] = []
        closes: builtins.list[tuple[str, FactStatus, datetime]] = []  # (fact_id, status, valid_to)
        for episode_id, plan in plans:
            for p in plan:
                counts[p.event] += 1
                fid = new_fact_id(user_id, episode_id, p.index)
                made = p.event in ("ADD", "UPDATE") and bool(p.new_text)
                if made:
                    new_facts.append(
                        Fact(
                            fact_id=fid,
                            user_id=user_id,
                            text=p.new_text or "",
                            vector=p.vector,
                            valid_from=p.valid_from,
                            created_at=now,
                            source_episode_ids=[episode_id],
                            importance=p.importance,
                            supersedes=p.target_fact_id if p.event == "UPDATE" else None,
                        )
                    )
                if p.event in ("UPDATE", "DELETE") and p.target_fact_id:
                    status: FactStatus = "superseded" if p.event == "UPDATE" else "deleted"
                    closes.append((p.target_fact_id, status, p.valid_from))
                history.append(
                    FactHistory(
                        history_id=history_id(episode_id, p.index, p.event),
                        user_id=user_id,
                        fact_id=(p.target_fact_id if p.event != "ADD" else fid) or "",
                        event=p.event,
                        old_text=p.old_text,
                        new_text=p.new_text,
                        new_fact_id=fid if made else None,
                        episode_id=episode_id,
                        decided_by=p.decided_by,
                        # one microsecond apart, so the history reads in decision
                        # order even when many episodes merge in one run
                        at=now + timedelta(microseconds=len(history)),
                    )
                )
        # new information lands before anything old is closed, so a crash in
        # between leaves the store with more, never less
        dim = self.store.dim
        self.store.insert_new("facts", [to_row(f, dim, norm=f.text.casefold()) for f in new_facts])
        if closes:
            self._close(user_id, closes, now)
        self.store.insert_new("fact_history", [to_row(h, dim) for h in history])
        return counts

    def _close(
        self, user_id: str, closes: builtins.list[tuple[str, FactStatus, datetime]], now: datetime
    ) -> None:
        current = {f.fact_id: f for f in self.by_ids(user_id, [c[0] for c in closes])}
        rows = []
        seen: set[str] = set()
        for fid, status, valid_to in closes:
            f = current.get(fid)
            if f is None or f.status != "active" or fid in seen:
                continue  # already closed (a rerun, or earlier in this batch) or not this user's
            seen.add(fid)
            rows.append(
                {
                    "fact_id": fid,
                    "status": status,
                    "valid_to": to_naive(valid_to),
                    "expired_at": to_naive(now),
                }
            )
        self.store.update_columns("facts", rows)

    def reword(
        self, user_id: str, fact_id: str, text: str, vector: Sequence[float], actor: str
    ) -> Fact:
        """A person's fix of what a fact says: it was recorded wrong, so the
        old row is superseded and never believed (valid to its own start; its
        text stays in the history) and the new one holds for the same time,
        citing the same episodes, with an UPDATE by `user-correction`. The
        same fix again changes nothing."""
        now = now_utc()
        new_id = stable_id("reworded", user_id, fact_id, text)
        (fact,) = self.by_ids(user_id, [fact_id])
        if fact.status != "active":
            done = self.by_ids(user_id, [new_id])
            if done and done[0].supersedes == fact_id:
                return done[0]
            raise ValueError(self._not_open(user_id, fact, "reword"))
        if text == fact.text:
            return fact
        new = fact.model_copy(
            update={
                "fact_id": new_id,
                "text": text,
                "vector": list(vector),
                "created_at": now,
                "recall_count": 0,
                "last_recalled_at": None,
                "supersedes": fact_id,
            }
        )
        dim = self.store.dim
        self.store.insert_new("facts", [to_row(new, dim, norm=text.casefold())])  # new first
        self.store.update_columns(
            "facts",
            [
                {
                    "fact_id": fact_id,
                    "status": "superseded",
                    "valid_to": to_naive(fact.valid_from),
                    "expired_at": to_naive(now),
                }
            ],
        )
        row = FactHistory(
            history_id=stable_id("reworded-history", user_id, fact_id, new_id),
            user_id=user_id,
            fact_id=fact_id,
            event="UPDATE",
            old_text=fact.text,
            new_text=text,
            new_fact_id=new_id,
            episode_id="",
            decided_by=f"user-correction:{actor}",
            at=now,
        )
        self.store.insert_new("fact_history", [to_row(row, dim)])
        (new,) = self.by_ids(user_id, [new_id])
        return new

    def _not_open(self, user_id: str, fact: Fact, verb: str) -> str:
        """Why `verb` is refused for a fact no longer believed, and what to do."""
        if fact.status == "deleted":
            return f"fact {fact.fact_id} is deleted: restore it first, then {verb} it"
        successor = {f.supersedes: f for f in self.list(user_id, include_inactive=True)}
        now, seen = fact, {fact.fact_id}
        while (nxt := successor.get(now.fact_id)) is not None and nxt.fact_id not in seen:
            now, seen = nxt, seen | {nxt.fact_id}
        by = (
            f"fact {now.fact_id} ({now.text!r}, {now.status})"
            if now is not fact
            else "a newer fact"
        )
        return f"fact {fact.fact_id} is superseded: {by} replaced it; correct that one"

    def reopen(self, user_id: str, fact_id: str, decided_by: str) -> None:
        """A superseded fact believed again, its successor gone (a forget
        erased it): active from its own start, an ADD by `decided_by`."""
        now = now_utc()
        (fact,) = self.by_ids(user_id, [fact_id])
        self.store.update_columns(
            "facts",
            [{"fact_id": fact_id, "status": "active", "valid_to": None, "expired_at": None}],
        )
        row = FactHistory(
            history_id=stable_id("reopened", user_id, fact_id, now.isoformat()),
            user_id=user_id, fact_id=fact_id, event="ADD", old_text=None,
            new_text=fact.text, episode_id="", decided_by=decided_by, at=now,
        )  # fmt: skip
        self.store.insert_new("fact_history", [to_row(row, self.store.dim)])

    def correct(self, user_id: str, fact_id: str, *, active: bool, actor: str) -> Fact:
        """A person's correction of one fact: an active one closed now
        (DELETE) or a deleted one opened again (ADD), with a history row
        decided by `user-correction`. A superseded fact is neither: its
        successor is what is believed (opening it would make two)."""
        now = now_utc()
        (fact,) = self.by_ids(user_id, [fact_id])
        if fact.status == ("active" if active else "deleted"):
            return fact  # already so: no new history
        if fact.status == "superseded":
            raise ValueError(self._not_open(user_id, fact, "restore" if active else "invalidate"))
        status: FactStatus = "active" if active else "deleted"
        self.store.update_columns(
            "facts",
            [
                {
                    "fact_id": fact_id,
                    "status": status,
                    "valid_to": None if active else to_naive(now),
                    "expired_at": None if active else to_naive(now),
                }
            ],
        )
        event: FactEvent = "ADD" if active else "DELETE"
        row = FactHistory(
            history_id=stable_id("correction", user_id, fact_id, now.isoformat()),
            user_id=user_id,
            fact_id=fact_id,
            event=event,
            old_text=None if active else fact.text,
            new_text=fact.text if active else None,
            episode_id="",
            decided_by=f"user-correction:{actor}",
            at=now,
        )
        self.store.insert_new("fact_history", [to_row(row, self.store.dim)])
        (fact,) = self.by_ids(user_id, [fact_id])
        return fact
