"""The search's working set: each searched user's turns, facts, reflections
and episodes held in memory, kept in step with the store by reading only what
the tables gained since the last search (`storage.follow`). A warm search
reads five table versions and nothing else; the first search of a user reads
the user's rows once.

Users are evicted least recently searched first once the set holds more than
its budget (EPISODIC_WORKING_SET_MB); forgetting a user, a turn, an episode or
a fact drops the user's set here at once (a forget in another process is a
delete, which makes the next poll read the user again)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from episodic.service.item_set import ItemSet, Spans
from episodic.service.turn_set import RAW_COLUMNS, TurnSet
from storage import filters
from storage.db import Store
from storage.follow import Follower

FACT_COLUMNS = (
    "fact_id", "text", "vector", "status", "supersedes", "importance", "created_at",
    "source_episode_ids", "valid_from",
)  # fmt: skip
REFLECTION_COLUMNS = (
    "reflection_id", "text", "vector", "status", "importance", "created_at",
    "evidence_episode_ids", "evidence_fact_ids",
)  # fmt: skip
EPISODE_COLUMNS = ("episode_id", "stream_id", "first_seq", "last_seq", "salience", "status")


@dataclass
class UserMemory:
    """One user's part of the working set."""

    store: Store
    user_id: str
    model: str
    dim: int
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        mine = filters.user(self.user_id)
        self._raw = Follower(self.store, "raw_turns", mine, RAW_COLUMNS)
        self._vectors = Follower(
            self.store,
            "turn_vectors",
            mine & filters.eq("model", self.model),
            ("turn_id", "vector"),
        )
        self._episodes = Follower(self.store, "episodes", mine, EPISODE_COLUMNS)
        self._facts = Follower(self.store, "facts", mine, FACT_COLUMNS)
        self._reflections = Follower(self.store, "reflections", mine, REFLECTION_COLUMNS)
        self.turns = TurnSet(self.dim)
        self.facts = ItemSet("fact_id", self.dim)
        self.reflections = ItemSet("reflection_id", self.dim)
        self.episodes = Spans()
        self.size = 0

    def refresh(self) -> None:
        """Bring every part up to the store's newest versions (call under
        `lock`); `size` is then what the parts hold."""
        raw = self._raw.poll()
        if raw is not None:
            if raw.whole and len(self.turns):
                self._fresh_turns()
            if not self.turns.add_raw(raw.rows):
                self._reread_turns()
        vectors = self._vectors.poll()
        if vectors is not None:
            if vectors.whole and len(self.turns.dense):
                self._reread_turns()
            else:
                self.turns.add_vectors(vectors.rows)
        changed = raw is not None or vectors is not None
        for follower, part in (
            (self._episodes, self.episodes),
            (self._facts, self.facts),
            (self._reflections, self.reflections),
        ):
            delta = follower.poll()
            if delta is not None:
                part.apply(delta.rows, delta.whole)
                changed = True
        if changed:
            self.size = sum(
                p.nbytes() for p in (self.turns, self.facts, self.reflections, self.episodes)
            )

    def _fresh_turns(self) -> None:
        self.turns = TurnSet(self.dim)
        self._vectors = Follower(
            self.store, "turn_vectors", self._vectors.where, ("turn_id", "vector")
        )

    def _reread_turns(self) -> None:
        """The turns again from scratch: a held turn changed or went."""
        self._fresh_turns()
        self._raw = Follower(self.store, "raw_turns", self._raw.where, RAW_COLUMNS)
        first = self._raw.poll()
        if first is not None:
            self.turns.add_raw(first.rows)


class WorkingSet:
    """Every searched user's `UserMemory`, within `budget_mb`."""

    def __init__(self, store: Store, model: str, dim: int, budget_mb: int) -> None:
        self.store = store
        self.model = model
        self.dim = dim
        self.budget = budget_mb * 1024 * 1024
        self._users: OrderedDict[str, UserMemory] = OrderedDict()
        self._lock = threading.Lock()

    @contextmanager
    def user(self, user_id: str) -> Iterator[UserMemory]:
        """The user's memory, up to date, held for this search alone."""
        with self._lock:
            um = self._users.get(user_id)
            if um is None:
                um = self._users[user_id] = UserMemory(self.store, user_id, self.model, self.dim)
            self._users.move_to_end(user_id)
        with um.lock:
            um.refresh()
            yield um
        self._evict(keep=user_id)

    def holds(self, user_id: str) -> bool:
        with self._lock:
            return user_id in self._users

    def drop(self, user_id: str | None = None) -> None:
        """Forget what is held of a user (every user: None)."""
        with self._lock:
            if user_id is None:
                self._users.clear()
            else:
                self._users.pop(user_id, None)

    def _evict(self, keep: str) -> None:
        with self._lock:
            total = sum(m.size for m in self._users.values())
            for u in list(self._users):
                if total <= self.budget:
                    break
                if u != keep:
                    total -= self._users.pop(u).size

    def nbytes(self) -> int:
        with self._lock:
            return sum(m.size for m in self._users.values())
