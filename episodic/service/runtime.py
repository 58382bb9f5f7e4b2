"""The resources behind one `Memory` service: one store with its
repositories, one embedder, one LLM provider. The service owns one and hands
it to the consolidation steps; nothing looks it up globally."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from episodic.config import Settings
from episodic.embed.base import Embedder
from episodic.llm.base import LLMProvider
from episodic.models import stable_id
from episodic.service.working_set import WorkingSet
from episodic.stages import StageClock
from storage.db import Store, open_store
from storage.episodes import Episodes
from storage.facts import Facts
from storage.lease import LeaseBusy, user_lease
from storage.raw import RawLog
from storage.recalls import RecallLog
from storage.reflections import Reflections
from storage.state import Checkpoints
from storage.vectors import TurnVectors

FACTS_WAIT_S = 600.0  # a merge of a long backlog through a model can take minutes


@dataclass
class Runtime:
    """`provider` is built from the settings on first use, so commands that
    call no model (status, ingest, search) never need a model key; assigning
    it (tests, evaluations) replaces it."""

    settings: Settings
    store: Store
    embedder: Embedder
    _provider: LLMProvider | None = field(default=None, repr=False)
    raw: RawLog = field(init=False)
    episodes: Episodes = field(init=False)
    facts: Facts = field(init=False)
    reflections: Reflections = field(init=False)
    checkpoints: Checkpoints = field(init=False)
    vectors: TurnVectors = field(init=False)
    recalls: RecallLog = field(init=False)  # search's recall writes, off the query path
    user_locks: dict[str, threading.Lock] = field(default_factory=dict)
    working: WorkingSet = field(init=False)  # the search's users in memory
    stages: StageClock = field(default_factory=StageClock)
    _provider_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.raw = RawLog(self.store)
        self.episodes = Episodes(self.store)
        self.facts = Facts(self.store)
        self.reflections = Reflections(self.store)
        self.checkpoints = Checkpoints(self.store)
        self.vectors = TurnVectors(self.store)
        self.recalls = RecallLog(self.store)
        self.working = WorkingSet(
            self.store, self.embedder.name, self.embedder.dim, self.settings.working_set_mb
        )

    @property
    def provider(self) -> LLMProvider:
        with self._provider_lock:
            if self._provider is None:
                from episodic.llm.factory import make_provider

                self._provider = make_provider(self.settings)
            return self._provider

    @provider.setter
    def provider(self, value: LLMProvider) -> None:
        self._provider = value

    @contextmanager
    def facts_held(self, user_id: str, *, wait_s: float = FACTS_WAIT_S) -> Iterator[None]:
        """The user's facts held against every other writer of them: a merge
        and a person's correction never interleave (a reword between a merge's
        read and its write could leave two active facts). A thread lock within this
        process, the facts lease across processes; LeaseBusy after `wait_s`."""
        lock = self.user_locks.setdefault(user_id, threading.Lock())
        if not lock.acquire(timeout=wait_s):
            raise LeaseBusy(stable_id("lease", "facts", user_id)[:8], wait_s)
        try:
            with user_lease(self.store.uri, user_id, scope="facts", wait_s=wait_s):
                yield
        finally:
            lock.release()


def build_runtime(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    provider: LLMProvider | None = None,
) -> Runtime:
    """The resources for `settings`; `embedder` and `provider` replace the
    ones the settings name (tests, evaluations)."""
    if embedder is None:
        from episodic.embed import make_embedder

        embedder = make_embedder(settings.embedder)
    store = open_store(settings, dim=embedder.dim)
    return Runtime(settings=settings, store=store, embedder=embedder, _provider=provider)
